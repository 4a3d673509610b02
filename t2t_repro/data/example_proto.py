"""tf.train.Example records of two id sequences, serialized without TensorFlow.

Datagen's worker processes serialize examples without importing TensorFlow (seconds and about half a
gigabyte per process). The bytes are exactly those of

    tf.train.Example(features=tf.train.Features(feature={
        "inputs": tf.train.Feature(int64_list=tf.train.Int64List(value=input_ids)),
        "targets": tf.train.Feature(int64_list=tf.train.Int64List(value=target_ids)),
    })).SerializeToString(deterministic=True)

(the tests compare them): protobuf's wire format with the map entries in key order, each field a tag byte
(field number << 3 | wire type 2, length-delimited) followed by its length as a varint and its bytes, and the
ids a packed run of varints (a negative id, never made here, as the 10-byte two's complement protobuf writes).

    serialize = ExampleSerializer(vocab_size=37000)
    record = serialize([17, 4, 1], [9, 1])
"""

_EXAMPLE_FEATURES = b"\x0a"  # Example.features = 1
_FEATURES_ENTRY = b"\x0a"  # Features.feature (a map) = 1: one length-delimited entry per key
_ENTRY_KEY = b"\x0a"  # map entry key = 1
_ENTRY_VALUE = b"\x12"  # map entry value = 2
_FEATURE_INT64_LIST = b"\x1a"  # Feature.int64_list = 3
_INT64_LIST_VALUES = b"\x0a"  # Int64List.value = 1, packed
_KEYS = (b"inputs", b"targets")  # deterministic serialization writes a map's entries in key order
_UINT64 = (1 << 64) - 1


def varint(value):
    """The protobuf varint of an int64 `value` (negative values as their unsigned 64-bit two's complement)."""
    value &= _UINT64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _delimited(tag, payload):
    return tag + varint(len(payload)) + payload


class ExampleSerializer:
    """Serializes (input ids, target ids) as a tf.train.Example; ids below `vocab_size` come from a table.

    Args:
        vocab_size: ids 0 .. vocab_size - 1 have their varint precomputed (other ids are encoded as they come).
    """

    def __init__(self, vocab_size):
        self._table = [varint(value) for value in range(max(vocab_size, 1 << 14))]  # lengths use it too
        self._keys = [_delimited(_ENTRY_KEY, key) + _ENTRY_VALUE for key in _KEYS]

    def _length(self, payload):
        size = len(payload)
        return self._table[size] if size < len(self._table) else varint(size)

    def __call__(self, input_ids, target_ids):
        table = self._table
        length = self._length
        entries = []
        for key, ids in zip(self._keys, (input_ids, target_ids)):
            if ids and 0 <= min(ids) and max(ids) < len(table):
                payload = b"".join(map(table.__getitem__, ids))
            else:
                payload = b"".join(map(varint, ids))
            values = _INT64_LIST_VALUES + length(payload) + payload if payload else b""  # empty: omitted
            feature = _FEATURE_INT64_LIST + length(values) + values
            entry = key + length(feature) + feature
            entries.append(_FEATURES_ENTRY + length(entry) + entry)
        features = b"".join(entries)
        return _EXAMPLE_FEATURES + length(features) + features
