"""The snapshot document (``snapshot.json``, schema ``xwatch.snapshot/1``): its structs
live in ``core.model`` (the engine's snapshot types carry the same structs, so the
data flows one way, engine -> export), re-exported here as one namespace (``from
xwatch.core.export import document as D``); beside them, the generated JSON Schema
(``schema``) and the upgrade of earlier versions' files (``upgrade``)."""

from xwatch.core import model as _model
from xwatch.core.model import *  # noqa: F403

__all__ = _model.__all__
