"""``zlib`` (3.11): ``zlib.error`` -- documented: "Exception raised on compression and
decompression errors"."""

from . import register

register("zlib", ("*",), ("zlib.error",))
