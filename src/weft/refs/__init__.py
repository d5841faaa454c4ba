"""The language of references and output paths: ``†kind.path`` reads, resolved against a
store or any scope, and ``_outputPath`` writes, parsed, checked against a state schema
and applied."""

from weft.refs.outputs import ChosenPath, OutputPath
from weft.refs.parse import Expression, Reference
from weft.refs.resolve import references_in, resolve
from weft.refs.scopes import MappingScope, Scope, StoreScope
from weft.refs.writes import Target

__all__ = [
    "ChosenPath",
    "Expression",
    "MappingScope",
    "OutputPath",
    "Reference",
    "Scope",
    "StoreScope",
    "Target",
    "references_in",
    "resolve",
]
