"""An Avro data file's writer schema resolved to Iceberg field ids, for reading it by id.

:func:`resolve_file_schema` walks the writer schema of an Avro data file and gives every
value position (record field, array element, map key and value, union branch) its Iceberg
field id and name, as Java's ``AvroSchemaUtil`` / ``SchemaToType`` / ``ApplyNameMapping`` see
them:

* a file whose schema carries ids (``field-id`` on record fields, ``element-id`` on arrays,
  ``key-id`` / ``value-id`` on maps; what every Iceberg writer writes) is read by those ids;
  the name mapping is then only used for the branches of complex unions (Iceberg writers
  never write those, so they carry no ids);
* a file without any id is read through the table's name mapping
  (``schema.name-mapping.default``), matching the Avro names along each path (``element``
  inside arrays, ``key`` / ``value`` inside maps); without a mapping the read fails with
  :class:`~icepark.errors.InvalidSchemaError` naming the file and the first field;
* ``["null", T]`` (either order) is an optional ``T``; a union of two or more non-null types
  (optionally with null) is a *complex union*, read as ``struct<tag: int, field0: T0,
  field1: T1, ...>`` (Java's convention): ``fieldN`` is the N-th non-null branch in the
  union's order, ``tag`` the number of the branch a value took (counting non-null branches
  only, so it always names the field that holds the value), and a null value makes the
  whole struct null. The ids of ``tag`` and ``fieldN`` come from the name mapping at
  ``<union path>.tag`` / ``<union path>.fieldN`` (what :func:`create_name_mapping` gives for
  a table whose schema holds that struct);
* an Avro array of ``{key, value}`` records with ``"logicalType": "map"`` is a map (Iceberg's
  encoding of maps whose keys are not strings), an enum is a string.

Fields without an id (not in the mapping) are kept in the tree, so that a reader can step
over them, but left out of :attr:`AvroFileSchema.struct`. A union with two branches of the
same type (two ``int``, two records of one name) is invalid Avro and raises
:class:`~icepark.errors.InvalidAvroFileError` naming the file and the field.

:func:`avro_to_iceberg_schema` converts a schema without ids (a Kafka topic's, say) into an
Iceberg schema with fresh ids, complex unions included, for creating a table whose name
mapping (:func:`~icepark.spec.name_mapping.create_name_mapping`) then reads such files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from icepark.avro.blocks import UnsupportedAvroError, resolve_named
from icepark.avro.schema import (
    ELEMENT_ID_PROP,
    FIELD_ID_PROP,
    ICEBERG_FIELD_NAME_PROP,
    KEY_ID_PROP,
    VALUE_ID_PROP,
    named_avro_types,
)
from icepark.errors import IceparkError, InvalidAvroFileError, InvalidSchemaError
from icepark.spec.name_mapping import NameMapping
from icepark.spec.schema import Schema, assign_fresh_ids
from icepark.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

__all__ = [
    "AvroChild",
    "AvroFileSchema",
    "AvroNode",
    "TAG_NAME",
    "avro_to_iceberg_schema",
    "branch_name",
    "resolve_file_schema",
]

TAG_NAME = "tag"
"""The name of the branch-number field of a complex union's struct."""

_PRIMITIVES = frozenset(
    {"null", "boolean", "int", "long", "float", "double", "bytes", "string", "fixed", "enum"}
)


def branch_name(index: int) -> str:
    """The struct field name of the ``index``-th non-null branch of a complex union."""
    return f"field{index}"


@dataclass(frozen=True, eq=False)
class AvroChild:
    """A value position inside a node: a record field, an array element, a map key or value,
    a union branch.

    ``node`` is the value's type with an option union (``["null", T]``) unwrapped;
    ``null_index`` is the null branch's index in that option union (None when the position
    is not an option union). ``branch`` is the Avro branch index of a union branch.
    """

    name: str
    field_id: int | None
    node: AvroNode
    optional: bool
    null_index: int | None = None
    branch: int | None = None
    written: Any = None  # the Avro type as written here (an option union included)


@dataclass(frozen=True, eq=False)
class AvroNode:
    """A resolved Avro type.

    ``kind`` is ``record``, ``array``, ``map`` (an Avro map, string keys), ``kvmap`` (an
    array of key/value records), ``union`` (a complex union) or a primitive kind (``null``,
    ``boolean``, ``int``, ``long``, ``float``, ``double``, ``bytes``, ``string``, ``fixed``,
    ``enum``). ``schema`` is the resolved Avro schema of the value (a record's, fixed's or
    enum's definition, a primitive's name or dict). ``children``: a record's fields, an
    array's element, a map's key and value (for ``kvmap`` in the record's field order), a
    union's non-null branches. A union's ``tag`` holds the id of its tag field;
    ``null_index`` is the index of its null branch, if any.
    """

    kind: str
    schema: Any
    children: tuple[AvroChild, ...] = ()
    logical: str | None = None
    tag: AvroChild | None = None
    null_index: int | None = None
    branch_count: int = 0
    key_first: bool = True  # kvmap: whether the key is the record's first field
    props: Mapping[str, Any] = field(default_factory=dict)

    def iceberg_type(self) -> IcebergType | None:
        """The Iceberg type of values of this node (fields without ids left out), or None
        when a list element, map key or value has no id."""
        return _iceberg_type(self)


@dataclass(frozen=True, eq=False)
class AvroFileSchema:
    """An Avro file's writer schema resolved to ids; ``struct`` is its Iceberg form."""

    location: str
    writer_schema: Any
    named: dict[str, Any]
    root: AvroNode
    struct: StructType
    has_ids: bool


# -- resolution ----------------------------------------------------------------------------


class _Resolver:
    def __init__(
        self,
        location: str,
        named: dict[str, Any],
        mapping: NameMapping | None,
        has_ids: bool,
        fresh_ids: bool = False,
    ) -> None:
        self.location = location
        self.named = named
        self.mapping = mapping
        self.has_ids = has_ids
        self.fresh_ids = fresh_ids  # placeholder ids everywhere (for assign_fresh_ids)
        self._next = 0
        self._records: list[dict[str, Any]] = []  # the records on the path (no recursion)

    def _error(self, path: tuple[str, ...], problem: str) -> InvalidAvroFileError:
        where = ".".join(path) or "<root>"
        return InvalidAvroFileError(
            f"Cannot read Avro file {self.location}: field {where!r}: {problem}"
        )

    def _mapped_id(self, path: tuple[str, ...]) -> int | None:
        if self.fresh_ids:
            self._next += 1
            return self._next
        if self.mapping is None:
            return None
        found = self.mapping.find(*path)
        return None if found is None else found.field_id

    def _prop_id(self, obj: Any, prop: str, path: tuple[str, ...]) -> int | None:
        if not self.has_ids:
            return self._mapped_id(path)
        value = obj.get(prop) if isinstance(obj, dict) else None
        if value is None:
            return None
        try:
            return int(value)
        except (TypeError, ValueError):
            raise self._error(path, f"invalid {prop} {value!r}") from None

    def child(
        self,
        name: str,
        avro: Any,
        path: tuple[str, ...],
        field_id: int | None,
        branch: int | None = None,
    ) -> AvroChild:
        """A value position of type ``avro`` (an option union is unwrapped)."""
        resolved = resolve_named(avro, self.named) if not isinstance(avro, list) else avro
        if isinstance(resolved, list):
            non_null = [i for i, b in enumerate(resolved) if _kind_of(b, self.named) != "null"]
            nulls = [i for i, b in enumerate(resolved) if _kind_of(b, self.named) == "null"]
            self._check_union(resolved, path)
            if len(non_null) == 1 and nulls:
                node = self.node(resolved[non_null[0]], path)
                return AvroChild(name, field_id, node, True, nulls[0], branch, avro)
            if not non_null:
                null = AvroNode("null", "null")
                return AvroChild(name, field_id, null, True, None, branch, avro)
            node = self.union(resolved, path)
            optional = node.null_index is not None
            return AvroChild(name, field_id, node, optional, None, branch, avro)
        node = self.node(resolved, path)
        return AvroChild(name, field_id, node, node.kind == "null", None, branch, avro)

    def _check_union(self, branches: list[Any], path: tuple[str, ...]) -> None:
        seen: set[str] = set()
        for b in branches:
            key = _branch_type_name(b, self.named)
            if key in seen:
                raise self._error(path, f"the union has two branches of type {key!r}")
            seen.add(key)

    def union(self, branches: list[Any], path: tuple[str, ...]) -> AvroNode:
        children = []
        null_index = None
        n = 0
        for i, b in enumerate(branches):
            if _kind_of(b, self.named) == "null":
                null_index = i
                continue
            name = branch_name(n)
            sub = (*path, name)
            branch = self.child(name, b, sub, self._mapped_id(sub), branch=i)
            children.append(replace(branch, optional=True))  # set only when taken
            n += 1
        tag_path = (*path, TAG_NAME)
        tag = AvroChild(TAG_NAME, self._mapped_id(tag_path), AvroNode("int", "int"), False)
        return AvroNode(
            "union",
            branches,
            tuple(children),
            tag=tag,
            null_index=null_index,
            branch_count=len(branches),
        )

    def node(self, avro: Any, path: tuple[str, ...]) -> AvroNode:
        avro = resolve_named(avro, self.named)
        if isinstance(avro, list):
            raise self._error(path, "a union directly inside a union is not valid Avro")
        kind = avro.get("type") if isinstance(avro, dict) else avro
        props = avro if isinstance(avro, dict) else {}
        logical = props.get("logicalType") if isinstance(props, dict) else None
        if kind == "record":
            return self.record(avro, path)
        if kind == "array":
            items = resolve_named(avro.get("items"), self.named)
            if (
                logical == "map"
                and isinstance(items, dict)
                and items.get("type") == "record"
                and {f.get("name") for f in items.get("fields", [])} == {"key", "value"}
            ):
                return self.kvmap(items, path)
            element_path = (*path, "element")
            eid = self._prop_id(avro, ELEMENT_ID_PROP, element_path)
            element = self.child("element", avro.get("items"), element_path, eid)
            return AvroNode("array", avro, (element,), props=props)
        if kind == "map":
            key_path, value_path = (*path, "key"), (*path, "value")
            key = AvroChild(
                "key",
                self._prop_id(avro, KEY_ID_PROP, key_path),
                AvroNode("string", "string"),
                False,
                written="string",
            )
            value_id = self._prop_id(avro, VALUE_ID_PROP, value_path)
            value = self.child("value", avro.get("values"), value_path, value_id)
            return AvroNode("map", avro, (key, value), props=props)
        if kind in _PRIMITIVES:
            return AvroNode(str(kind), avro, logical=logical, props=props)
        raise self._error(path, f"unsupported Avro type {kind!r}")

    def record(self, avro: dict[str, Any], path: tuple[str, ...]) -> AvroNode:
        if any(r is avro for r in self._records):
            raise self._error(path, f"record {avro.get('name')!r} contains itself (recursive)")
        self._records.append(avro)
        try:
            return self._record(avro, path)
        finally:
            self._records.pop()

    def _record(self, avro: dict[str, Any], path: tuple[str, ...]) -> AvroNode:
        children = []
        names: set[str] = set()
        for f in avro.get("fields", []):
            avro_name = f.get("name")
            if not isinstance(avro_name, str):
                raise self._error(path, f"a record field without a name: {f!r}")
            name = f.get(ICEBERG_FIELD_NAME_PROP, avro_name) if self.has_ids else avro_name
            if avro_name in names or name in names:
                raise self._error(path, f"two record fields named {avro_name!r}")
            names.update((avro_name, name))
            sub = (*path, avro_name)
            fid = self._prop_id(f, FIELD_ID_PROP, sub)
            children.append(self.child(name, f.get("type"), sub, fid))
        return AvroNode("record", avro, tuple(children))

    def kvmap(self, record: dict[str, Any], path: tuple[str, ...]) -> AvroNode:
        fields = record.get("fields", [])
        by_name = {f.get("name"): f for f in fields}
        key_path, value_path = (*path, "key"), (*path, "value")
        key = self.child(
            "key",
            by_name["key"].get("type"),
            key_path,
            self._prop_id(by_name["key"], FIELD_ID_PROP, key_path),
        )
        value = self.child(
            "value",
            by_name["value"].get("type"),
            value_path,
            self._prop_id(by_name["value"], FIELD_ID_PROP, value_path),
        )
        key_first = fields[0].get("name") == "key"
        return AvroNode("kvmap", record, (key, value), key_first=key_first)


def _kind_of(avro: Any, named: Mapping[str, Any]) -> str:
    resolved = resolve_named(avro, named)
    if isinstance(resolved, list):
        return "union"
    kind = resolved.get("type") if isinstance(resolved, dict) else resolved
    return str(kind)


def _branch_type_name(avro: Any, named: Mapping[str, Any]) -> str:
    """The name Avro identifies a union branch by: a named type's full name, else its kind."""
    resolved = resolve_named(avro, named)
    if isinstance(resolved, dict) and resolved.get("type") in ("record", "enum", "fixed"):
        name = str(resolved.get("name", ""))
        namespace = resolved.get("namespace")
        return f"{namespace}.{name}" if namespace and "." not in name else name
    return _kind_of(resolved, named)


def _schema_has_ids(avro: Any) -> bool:
    """Whether any record field of ``avro`` carries a ``field-id`` (Java's ``HasIds``)."""
    found = False

    def visit(node: Any) -> None:
        nonlocal found
        if found:
            return
        if isinstance(node, list):
            for item in node:
                visit(item)
        elif isinstance(node, dict):
            if any(k in node for k in (ELEMENT_ID_PROP, KEY_ID_PROP, VALUE_ID_PROP)):
                found = True
                return
            for f in node.get("fields", []) if isinstance(node.get("fields"), list) else []:
                if isinstance(f, dict) and FIELD_ID_PROP in f:
                    found = True
                    return
                visit(f.get("type") if isinstance(f, dict) else None)
            for key in ("type", "items", "values"):
                if key in node and not isinstance(node[key], str):
                    visit(node[key])

    visit(avro)
    return found


def _first_field_name(avro: Any) -> str:
    if isinstance(avro, dict):
        for f in avro.get("fields", []):
            if isinstance(f, dict) and "name" in f:
                return str(f["name"])
    return "<root>"


def resolve_file_schema(
    location: str, writer_schema: Any, name_mapping: NameMapping | None
) -> AvroFileSchema:
    """The writer schema of the Avro data file at ``location`` resolved to Iceberg ids (see
    the module docstring)."""
    try:
        return _resolve(location, writer_schema, name_mapping)
    except IceparkError:
        raise
    except (UnsupportedAvroError, AttributeError, TypeError, KeyError, ValueError) as exc:
        # a type Avro does not have, a bad union, a schema node of the wrong JSON shape
        raise InvalidAvroFileError(
            f"Cannot read Avro file {location}: its schema is not valid Avro "
            f"({type(exc).__name__}: {exc})"[:500]
        ) from exc


def _resolve(location: str, writer_schema: Any, name_mapping: NameMapping | None) -> AvroFileSchema:
    named = named_avro_types(writer_schema)
    root_schema = resolve_named(writer_schema, named)
    if not isinstance(root_schema, dict) or root_schema.get("type") != "record":
        raise InvalidAvroFileError(
            f"Cannot read Avro file {location}: its schema is not a record: {writer_schema!r}"[:500]
        )
    has_ids = _schema_has_ids(root_schema)
    if not has_ids and name_mapping is None:
        raise InvalidSchemaError(
            f"Data file {location} has no field ids (first field "
            f"{_first_field_name(root_schema)!r}) and no name mapping was given to read it "
            "(set the table property schema.name-mapping.default)"
        )
    resolver = _Resolver(location, named, name_mapping, has_ids)
    root = resolver.record(root_schema, ())
    struct = root.iceberg_type()
    assert isinstance(struct, StructType)
    return AvroFileSchema(location, writer_schema, named, root, struct, has_ids)


# -- Iceberg types ---------------------------------------------------------------------------


def _primitive_type(node: AvroNode) -> IcebergType:
    kind, logical, props = node.kind, node.logical, node.props
    raw_utc = props.get("adjust-to-utc", False) if isinstance(props, Mapping) else False
    utc = raw_utc is True or (isinstance(raw_utc, str) and raw_utc.strip().lower() == "true")
    if kind == "int" and logical == "date":
        return DateType()
    if kind in ("int", "long") and logical in ("time-micros", "time-millis"):
        return TimeType()
    if kind == "long" and logical in ("timestamp-micros", "timestamp-millis"):
        return TimestamptzType() if utc else TimestampType()
    if kind == "long" and logical in ("local-timestamp-micros", "local-timestamp-millis"):
        return TimestampType()
    if kind == "long" and logical == "timestamp-nanos":
        return TimestamptzNanoType() if utc else TimestampNanoType()
    if kind == "long" and logical == "local-timestamp-nanos":
        return TimestampNanoType()
    if kind in ("fixed", "bytes") and logical == "decimal":
        return DecimalType(int(props["precision"]), int(props.get("scale", 0)))
    if kind in ("fixed", "string") and logical == "uuid":
        if kind == "fixed" and int(props.get("size", 0)) != 16:
            return FixedType(int(props["size"]))
        return UUIDType()
    if kind == "fixed":
        return FixedType(int(props["size"]))
    simple: dict[str, IcebergType] = {
        "boolean": BooleanType(),
        "int": IntegerType(),
        "long": LongType(),
        "float": FloatType(),
        "double": DoubleType(),
        "string": StringType(),
        "bytes": BinaryType(),
        "null": UnknownType(),
        "enum": StringType(),
    }
    return simple[kind]


def _fields(children: tuple[AvroChild, ...]) -> list[NestedField]:
    out = []
    for c in children:
        if c.field_id is None:
            continue
        t = c.node.iceberg_type()
        if t is None:
            continue
        out.append(NestedField(c.field_id, c.name, t, required=not c.optional))
    return out


def _iceberg_type(node: AvroNode) -> IcebergType | None:
    if node.kind == "record":
        return StructType(*_fields(node.children))
    if node.kind == "union":
        fields = _fields(node.children)
        assert node.tag is not None
        if node.tag.field_id is not None:
            fields.insert(0, NestedField(node.tag.field_id, TAG_NAME, IntegerType(), True))
        return StructType(*fields)
    if node.kind == "array":
        (element,) = node.children
        et = element.node.iceberg_type()
        if element.field_id is None or et is None:
            return None
        return ListType(element.field_id, et, not element.optional)
    if node.kind in ("map", "kvmap"):
        key, value = node.children
        kt, vt = key.node.iceberg_type(), value.node.iceberg_type()
        if key.field_id is None or value.field_id is None or kt is None or vt is None:
            return None
        return MapType(key.field_id, kt, value.field_id, vt, not value.optional)
    return _primitive_type(node)


# -- schemas without ids ---------------------------------------------------------------------


def avro_to_iceberg_schema(avro: Any) -> Schema:
    """The Iceberg schema of an Avro record schema, ignoring any ids it has: fresh ids,
    breadth first from 1 (as Java's ``AvroSchemaUtil.toIceberg``), complex unions as
    ``struct<tag, field0, ...>``. With :func:`~icepark.spec.name_mapping.create_name_mapping`
    of the result, files written with ``avro`` read by name."""
    named = named_avro_types(avro)
    root_schema = resolve_named(avro, named)
    if not isinstance(root_schema, dict) or root_schema.get("type") != "record":
        raise InvalidSchemaError(f"An Avro record schema is needed, got {avro!r}"[:500])
    resolver = _Resolver("<schema>", named, None, has_ids=False, fresh_ids=True)
    struct = resolver.record(root_schema, ()).iceberg_type()
    assert isinstance(struct, StructType)
    return assign_fresh_ids(struct)
