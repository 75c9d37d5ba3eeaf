"""Row filters: the expression model, binding, a filter parser, projections and evaluators.

Build filters with :func:`col` (``col("ts") >= "2024-01-01"``, ``col("id").isin([1, 2])``)
and ``&``, ``|``, ``~``, or parse them with :func:`parse_filter`; :func:`bind` resolves them
against a schema. The evaluators decide, for scan planning, whether a partition tuple, a
manifest or a data file can hold matching rows (see the Iceberg spec, "Scan Planning").
"""

from icepark.expressions.binding import (
    bind,
    bind_reference,
    referenced_field_ids,
    referenced_names,
    unbind,
)
from icepark.expressions.expression_evaluator import compile_bound, evaluator
from icepark.expressions.literals import (
    ABOVE_MAX,
    BELOW_MIN,
    Inexact,
    convert_literal,
    to_literal,
)
from icepark.expressions.manifest_evaluator import manifest_evaluator
from icepark.expressions.metrics_evaluator import (
    InclusiveMetricsEvaluator,
    StrictMetricsEvaluator,
)
from icepark.expressions.model import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    Expression,
    Not,
    Operation,
    Or,
    and_,
    not_,
    or_,
)
from icepark.expressions.parser import as_filter, parse_filter
from icepark.expressions.predicates import (
    Accessor,
    BoundLiteralPredicate,
    BoundPredicate,
    BoundReference,
    BoundSetPredicate,
    BoundUnaryPredicate,
    LiteralPredicate,
    Predicate,
    Reference,
    SetPredicate,
    Term,
    UnaryPredicate,
    UnboundPredicate,
    col,
    format_literal,
    predicate,
)
from icepark.expressions.projection import inclusive_projection, strict_projection
from icepark.expressions.residual import ResidualEvaluator, residual_evaluator
from icepark.expressions.transform_projection import project_predicate
from icepark.expressions.visitors import (
    BoundPredicateVisitor,
    ExpressionVisitor,
    rewrite_not,
    visit,
)

__all__ = [
    "InclusiveMetricsEvaluator",
    "ResidualEvaluator",
    "StrictMetricsEvaluator",
    "compile_bound",
    "evaluator",
    "inclusive_projection",
    "manifest_evaluator",
    "project_predicate",
    "residual_evaluator",
    "strict_projection",
    "ABOVE_MAX",
    "BELOW_MIN",
    "Accessor",
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "BooleanExpression",
    "BoundLiteralPredicate",
    "BoundPredicate",
    "BoundPredicateVisitor",
    "BoundReference",
    "BoundSetPredicate",
    "BoundUnaryPredicate",
    "Expression",
    "ExpressionVisitor",
    "Inexact",
    "LiteralPredicate",
    "Not",
    "Operation",
    "Or",
    "Predicate",
    "Reference",
    "SetPredicate",
    "Term",
    "UnaryPredicate",
    "UnboundPredicate",
    "and_",
    "bind",
    "bind_reference",
    "col",
    "convert_literal",
    "format_literal",
    "not_",
    "or_",
    "as_filter",
    "parse_filter",
    "predicate",
    "referenced_field_ids",
    "referenced_names",
    "rewrite_not",
    "to_literal",
    "unbind",
    "visit",
]
