"""``email`` (3.11): the parser records most defects instead of raising (``email.errors``: "the
parser ... will not raise"), and what it raises derives from ``email.errors.MessageError``
(documented: "the base class for all exceptions that the email package can raise")."""

from . import register

register("email", ("*",), ("email.errors.MessageError",))
