"""The errors icepark raises: one root, split by what the caller can do about them."""

from __future__ import annotations

__all__ = [
    "IceparkError",
    "ValidationError",
    "InvalidSchemaError",
    "InvalidTransformError",
    "InvalidMetadataError",
    "UnsupportedFormatVersionError",
    "InvalidAvroFileError",
    "InvalidValueError",
    "CommitFailedError",
    "CommitStateUnknownError",
    "RequirementFailedError",
    "NoSuchNamespaceError",
    "NamespaceAlreadyExistsError",
    "NamespaceNotEmptyError",
    "NoSuchTableError",
    "TableAlreadyExistsError",
    "FileAlreadyExistsError",
    "NoSuchFileError",
    "CatalogConfigError",
    "UnsupportedOperationError",
    "StorageError",
    "NoSuchViewError",
    "ViewAlreadyExistsError",
    "NoSuchPlanError",
    "RestError",
    "BadRequestError",
    "NotAuthorizedError",
    "ForbiddenError",
    "ServiceUnavailableError",
    "ServerError",
]


class IceparkError(Exception):
    """Root of every error icepark raises on purpose."""


class ValidationError(IceparkError, ValueError):
    """Input that breaks a rule of the Iceberg spec or of the operation asked for."""


class InvalidSchemaError(ValidationError):
    """A schema, type or field that the spec does not allow."""


class InvalidTransformError(ValidationError):
    """An unknown transform, or a transform applied to a type it does not accept."""


class InvalidValueError(ValidationError):
    """A single value that cannot be read or written for its type."""


class InvalidMetadataError(ValidationError):
    """A table metadata file (or document) that is malformed or inconsistent."""


class UnsupportedFormatVersionError(InvalidMetadataError):
    """A format version above the highest this implementation supports."""


class InvalidAvroFileError(ValidationError):
    """A manifest or manifest list that is not a valid Iceberg Avro file."""


class CommitFailedError(IceparkError):
    """A commit was refused because the table changed underneath it; retrying may succeed."""


class RequirementFailedError(CommitFailedError):
    """A TableRequirement did not hold against the current metadata."""


class CommitStateUnknownError(IceparkError):
    """The outcome of a commit is unknown: never clean up files after this."""


class NoSuchNamespaceError(IceparkError, LookupError):
    """The namespace does not exist."""


class NamespaceAlreadyExistsError(IceparkError):
    """The namespace exists already."""


class NamespaceNotEmptyError(IceparkError):
    """The namespace still holds tables."""


class NoSuchTableError(IceparkError, LookupError):
    """The table does not exist."""


class TableAlreadyExistsError(IceparkError):
    """A table of that name exists already."""


class FileAlreadyExistsError(IceparkError, FileExistsError):
    """A file that must be created fresh exists already."""


class NoSuchFileError(IceparkError, FileNotFoundError):
    """A file that must exist does not."""


class CatalogConfigError(IceparkError, ValueError):
    """A catalog configuration that cannot be used."""


class UnsupportedOperationError(IceparkError):
    """The operation is not supported here (by this catalog, format version, ...)."""


class StorageError(IceparkError, OSError):
    """Object storage refused a request or could not serve it: wrong credentials, a bucket
    that does not exist, an endpoint that does not answer, or errors that outlasted the
    retries. The message names the bucket and the endpoint."""


class NoSuchViewError(IceparkError, LookupError):
    """A view that does not exist in the catalog."""


class ViewAlreadyExistsError(IceparkError):
    """A view (or a table) of that name exists already."""


class NoSuchPlanError(IceparkError, LookupError):
    """A server-side scan plan (or one of its plan tasks) that does not exist: never made,
    cancelled or expired (HTTP 404)."""


class RestError(IceparkError):
    """A REST catalog answered with an error that no more specific error names; the message
    carries the HTTP status, the server's error type and its message."""

    def __init__(self, message: str, status: int | None = None, error_type: str | None = None):
        super().__init__(message)
        self.status = status
        self.error_type = error_type


class BadRequestError(RestError, ValueError):
    """The REST catalog refused the request as malformed (HTTP 400)."""


class NotAuthorizedError(RestError):
    """The REST catalog did not accept the credentials (HTTP 401)."""


class ForbiddenError(RestError):
    """The credentials are valid but may not do this operation (HTTP 403)."""


class ServiceUnavailableError(RestError):
    """The REST catalog is unavailable (HTTP 503), after the retries."""


class ServerError(RestError):
    """The REST catalog failed on its side (HTTP 5xx)."""
