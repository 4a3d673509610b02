"""A Keras layer made only of other layers, built by its first call."""


class BuiltByCall:
    """Mixin (before the Keras base class) for a layer whose weights all belong to its sublayers, which create
    them at their own first call.

    Without a `build` of its own, Keras builds such a layer by tracing its whole `call` once in a scratch graph
    to infer the shapes (`compute_output_spec`), then runs it: building transformer_small that way took 5 s of
    a tool's start on a 2-core CPU, against 1 s with this (the same weights, created in the same order)."""

    def build(self, *shapes, **named_shapes):
        self.built = True
