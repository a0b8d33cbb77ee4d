"""``gzip`` (3.11): ``gzip.BadGzipFile`` -- documented: "An exception raised for invalid gzip
files ... EOFError and zlib.error can also be raised for invalid gzip files"."""

from . import register

register("gzip", ("*",), ("gzip.BadGzipFile", "builtins.EOFError", "zlib.error"))
