"""EVALB's crossing brackets, counted in O((n + m) log n) rather than by comparing every pair.

evalb.c counts, for each test bracket, 1 if some gold bracket crosses it ("crossing is counted based on the
brackets in test rather than gold file"), where gold [a, b) crosses test [c, d) when a < c < b < d or
c < a < d < b. Two sweeps answer that for all test brackets at once, each keeping a Fenwick tree of the
gold bracket ends (or starts) seen so far:
- gold brackets starting before c: does one end strictly inside (c, d)?  (a < c < b < d)
- gold brackets ending after d: does one start strictly inside (c, d)?   (c < a < d < b)
"""


class _PositionCounts:
    """How many positions were added below a bound: a Fenwick tree over 0..size-1."""

    def __init__(self, size):
        self._tree = [0] * (size + 1)

    def add(self, position):
        index = position + 1
        while index < len(self._tree):
            self._tree[index] += 1
            index += index & -index

    def below(self, bound):
        """How many added positions are < bound."""
        total, index = 0, min(bound, len(self._tree) - 1)
        while index > 0:
            total += self._tree[index]
            index -= index & -index
        return total

    def strictly_between(self, low, high):
        return self.below(high) - self.below(low + 1) if high > low + 1 else 0


def _crossed_from_one_side(gold, test, inserted_first, key, inserted_position):
    """Flags the test brackets for which some gold bracket, inserted when `inserted_first(gold, test)` holds
    in the sweep order `key`, has its `inserted_position` strictly inside the test span."""
    size = 1 + max(end for _, end in gold + test)
    counts = _PositionCounts(size)
    gold_order = sorted(gold, key=key)
    flags = [False] * len(test)
    next_gold = 0
    for index in sorted(range(len(test)), key=lambda i: key(test[i])):
        start, end = test[index]
        while next_gold < len(gold_order) and inserted_first(gold_order[next_gold], test[index]):
            counts.add(inserted_position(gold_order[next_gold]))
            next_gold += 1
        flags[index] = counts.strictly_between(start, end) > 0
    return flags


def count_crossing(gold, test):
    """The number of test spans (start, end) crossed by at least one gold span, as evalb.c counts them."""
    gold, test = [tuple(span) for span in gold], [tuple(span) for span in test]
    if not gold or not test:
        return 0
    left = _crossed_from_one_side(gold, test, lambda g, t: g[0] < t[0], key=lambda span: span[0],
                                  inserted_position=lambda g: g[1])
    right = _crossed_from_one_side(gold, test, lambda g, t: g[1] > t[1], key=lambda span: -span[1],
                                   inserted_position=lambda g: g[0])
    return sum(a or b for a, b in zip(left, right))
