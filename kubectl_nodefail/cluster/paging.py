"""List reads, page by page: every item of a list, its metadata only, or a server-side Table
(with or without its objects' metadata), trimmed and filtered as pages arrive, and read again
from the start once where a list breaks mid-way. A part of kube.Cluster (ListReads).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from kubectl_nodefail.cluster.resources import Obj, trim
from kubectl_nodefail.common.errors import ApiError, UnreachableError

T = TypeVar("T")
# A row of a Table read with its objects' metadata: (cells, metadata, or None without it).
Row = tuple[list[Any], "Obj | None"]
PAGE_SIZE = 500
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
# A server-side Table (the columns `kubectl get` prints) with rows only, no objects: ~150 bytes a
# pod instead of ~5 KB of PartialObjectMetadata (managedFields, labels, annotations).
TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1,application/json"
# Bigger pages for the two scans every diagnosis makes: each page costs the API server a fixed
# ~0.1 s on top (5,000 nodes: 1.3-1.9 s in pages of 500, 0.7 s in pages of 2,000, measured).
NODE_PAGE_SIZE = 2000
TABLE_PAGE_SIZE = 10000  # rows are small: fewer round trips, bounded server memory
# A list that breaks mid-way (410 Gone: the continue token expired; the API server restarting)
# is read again from the start, once.
LIST_RETRIES = 1
RETRIED_STATUSES = {410, 500, 502, 503, 504}
Keep = Callable[[Obj], "Obj | None"]


class ListReads:
    """The list reads of kube.Cluster, on its `get_json` and `shape`."""

    shape: dict[str, Callable[[Obj], Obj]]
    get_json: Callable[..., Obj]

    def list_pages(
        self, path: str, accept: str = "", limit: int = PAGE_SIZE, **query: Any
    ) -> Iterator[Obj]:
        """The pages of one list, in order (each a decoded list or Table document)."""
        cont: str | None = None
        while True:
            page = self.get_json(path, {**query, "limit": limit, "continue": cont}, accept)
            yield page
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                return

    def _read_list(self, read: Callable[[list[int]], T]) -> T:
        """Run one whole paginated read; if it breaks after its first page (410 Gone on an
        expired continue token, the API server restarting), run it again from the start once.
        A second failure raises the error with `mid_list = True` set on it."""
        attempt = 0
        while True:
            progress = [0]
            try:
                return read(progress)  # read counts the pages it got in progress[0]
            except (ApiError, UnreachableError) as exc:
                status = getattr(exc, "status", None)
                retriable = isinstance(exc, UnreachableError) or status in RETRIED_STATUSES
                if not retriable or progress[0] == 0:
                    raise
                if attempt >= LIST_RETRIES:
                    setattr(exc, "mid_list", True)  # noqa: B010 (read by gather's optional reads)
                    raise
                attempt += 1

    def list_all(
        self,
        path: str,
        kind: str,
        accept: str = "application/json",
        keep: Keep | None = None,
        limit: int = PAGE_SIZE,
        **query: Any,
    ) -> list[Obj]:
        """All items of a list, page by page; each item gets its `kind` (lists omit it) and is
        trimmed (see `trim`) and shaped (`self.shape`) as its page arrives. `keep` may drop items
        (return None) or slim them, so memory follows what is kept, not the list. Retried as
        `_read_list` says."""
        return self.list_versioned(path, kind, accept, keep, limit, **query)[0]

    def list_versioned(
        self,
        path: str,
        kind: str,
        accept: str = "application/json",
        keep: Keep | None = None,
        limit: int = PAGE_SIZE,
        **query: Any,
    ) -> tuple[list[Obj], str]:
        """`list_all`'s items and the list's resourceVersion (every page of a list is read at
        its first page's: the collection as it was then)."""

        shape = self.shape.get(kind)

        def read(pages: list[int]) -> tuple[list[Obj], str]:
            items: list[Obj] = []
            version = ""
            for page in self.list_pages(path, accept, limit, **query):
                pages[0] += 1
                if not version:
                    version = str((page.get("metadata") or {}).get("resourceVersion") or "")
                for item in page.get("items") or []:
                    if not isinstance(item, dict):
                        continue
                    item.setdefault("kind", kind)
                    item = shape(trim(item)) if shape else trim(item)
                    kept = keep(item) if keep else item
                    if kept is not None:
                        items.append(kept)
            return items, version

        return self._read_list(read)

    def list_metadata(self, path: str, keep: Keep | None = None, **query: Any) -> list[Obj]:
        """A cheap list: metadata only (PartialObjectMetadataList)."""
        return self.list_all(
            path, "PartialObjectMetadata", accept=METADATA_ONLY, keep=keep, **query
        )

    def list_table(
        self,
        path: str,
        keep: Callable[[list[str], list[Any]], bool] | None = None,
        **query: Any,
    ) -> tuple[list[str], list[list[Any]]]:
        """A server-side Table without objects: (column names, rows of cells), the rows
        filtered by keep(columns, cells) as pages arrive. The cheapest way to scan a big
        collection (~150 bytes a pod); rows carry no namespace. Retried as `_read_list` says."""

        def read(pages: list[int]) -> tuple[list[str], list[list[Any]]]:
            columns: list[str] = []
            rows: list[list[Any]] = []
            for page in self.list_pages(
                path, TABLE, TABLE_PAGE_SIZE, includeObject="None", **query
            ):
                pages[0] += 1
                if not columns:
                    columns = [str(c.get("name", "")) for c in page.get("columnDefinitions") or []]
                for row in page.get("rows") or []:
                    cells = row.get("cells") if isinstance(row, dict) else None
                    if isinstance(cells, list) and (keep is None or keep(columns, cells)):
                        rows.append(cells)
            return columns, rows

        return self._read_list(read)

    def list_rows(
        self,
        path: str,
        kind: str,
        keep: Callable[[Obj], bool] | None = None,
        **query: Any,
    ) -> tuple[list[str], list[Row], list[Obj]]:
        """A server-side Table whose rows carry their objects' metadata (includeObject=Metadata):
        (column names, rows, items). A row is (cells, [] where they are not a list; metadata
        trimmed as `trim` trims, or None where the row has no object with metadata): no row is
        dropped unseen; `keep(metadata)` may drop rows as pages arrive. A server may answer with
        a plain list instead (the Accept header allows it): its items, trimmed and shaped as
        `list_all` does (keep applied to their metadata), come back as `items`, with no rows.
        Retried as `_read_list` says."""
        shape = self.shape.get(kind)

        def read(pages: list[int]) -> tuple[list[str], list[Row], list[Obj]]:
            columns: list[str] = []
            rows: list[Row] = []
            items: list[Obj] = []
            for page in self.list_pages(path, TABLE, PAGE_SIZE, includeObject="Metadata", **query):
                pages[0] += 1
                if not columns:
                    columns = [str(c.get("name", "")) for c in page.get("columnDefinitions") or []]
                for row in page.get("rows") or []:
                    if not isinstance(row, dict):
                        rows.append(([], None))
                        continue
                    cells = row.get("cells")
                    cells = cells if isinstance(cells, list) else []  # decides nothing
                    obj = row.get("object")
                    meta = obj.get("metadata") if isinstance(obj, dict) else None
                    if isinstance(meta, dict) and isinstance(meta.get("name"), str):
                        meta = trim({"kind": kind, "metadata": meta})["metadata"]
                        if keep is None or keep(meta):
                            rows.append((cells, meta))
                    else:
                        rows.append((cells, None))
                for item in page.get("items") or []:
                    if isinstance(item, dict) and (keep is None or keep(item["metadata"])):
                        item.setdefault("kind", kind)
                        items.append(shape(trim(item)) if shape else trim(item))
            return columns, rows, items

        return self._read_list(read)
