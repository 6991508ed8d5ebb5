"""Errors the engine raises on purpose, each with a message a user can act on."""


class MindError(Exception):
    """Base class for every error this package raises on purpose."""


class ExtensionMissingError(MindError):
    """sqlite-vec cannot be loaded into any available SQLite driver."""


class InvalidInputError(MindError, ValueError):
    """A caller passed a value outside the contract (unknown importance, bad id, ...)."""


class NotFoundError(MindError, LookupError):
    """An id or key that does not exist."""


class FingerprintMismatchError(MindError):
    """A mind was opened with an embedder other than the one its vectors were made with."""


class MindAccessError(MindError):
    """A mind file cannot be opened or written: permissions, a read-only or full disk, not a mind."""
