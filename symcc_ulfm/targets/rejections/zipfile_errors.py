"""``zipfile`` (3.11): ``zipfile.BadZipFile`` -- documented: "The error raised for bad ZIP
files" -- and ``zipfile.LargeZipFile`` ("when a ZIP file would require ZIP64 functionality but
that has not been enabled")."""

from . import register

register("zipfile", ("*",), ("zipfile.BadZipFile", "zipfile.LargeZipFile"))
