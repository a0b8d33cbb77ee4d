"""``base64`` (3.11), as documented per function: ``b64decode``, ``standard_b64decode``,
``urlsafe_b64decode``, ``b32decode``, ``b32hexdecode`` and ``b16decode`` raise ``binascii.Error``
for incorrect padding or characters outside the alphabet; ``a85decode`` and ``b85decode`` raise
``ValueError`` for invalid input (``base64.py``); every decoder given a ``str`` with non-ASCII
characters raises ``ValueError`` ("string argument should contain only ASCII characters")."""

from . import register

register("base64", ("b64decode", "standard_b64decode", "urlsafe_b64decode", "b32decode", "b32hexdecode",
                    "b16decode", "decodebytes"), ("binascii.Error", "builtins.ValueError"))
register("base64", ("a85decode", "b85decode"), ("builtins.ValueError",))
