"""The nearest reachable pair of two entities that no path within the hop bound joins.

Both sides walk outwards one hop at a time, up to the same bound as the path
search, with the same relation filter. After k hops each, the two sides
"meet" when they reach a common node (gap 0) or two nodes joined by one
relation (gap 1); the first k at which that happens, and the pair with the
fewest hops in all, is the answer. It tells the LLM how close the two are
("both reach Docker" or "ComfyUI reaches Docker, Helm reaches Kubernetes, and
those two are related") instead of only "not connected". No meeting within
the bound on both sides: None.

Backends supply one primitive, `neighbours(kb, keys, relation_filter)`, so
the search is the same on every graph store.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from pydantic import BaseModel

# a side whose walk has reached this many nodes stops widening: the answer is about closeness,
# not worth a scan of a whole dense graph
MAX_SIDE_NODES = 20_000


class NearestPair(BaseModel):
    source_side: str  # the node on the source's side of the gap
    target_side: str  # the node on the target's side (the same node when gap is 0)
    hops_each: int  # each side walked at most this many hops to reach its node
    source_hops: int
    target_hops: int
    gap: int  # 0: both sides reach the same node; 1: one relation joins the two nodes

    def summary(self, source: str, target: str) -> str:
        def hops(n: int) -> str:
            return f"{n} hop" if n == 1 else f"{n} hops"

        if self.gap == 0:
            return (
                f"Nearest: both reach {self.source_side} ({source} in {hops(self.source_hops)}, "
                f"{target} in {hops(self.target_hops)})."
            )
        return (
            f"Nearest: {source} reaches {self.source_side} in {hops(self.source_hops)}, {target} reaches "
            f"{self.target_side} in {hops(self.target_hops)}, and those two are directly related."
        )


class Neighbours(Protocol):
    def neighbours(
        self, kb: str, keys: list[str], relation_filter: Iterable[str] | None = None
    ) -> list[tuple[str, str, str, str]]: ...


class _Side:
    def __init__(self, store: Neighbours, kb: str, key: str, relation_filter):
        self.store, self.kb, self.relation_filter = store, kb, relation_filter
        self.hops = {key: 0}
        self.names: dict[str, str] = {}
        self.adjacent: dict[str, set[str]] = {}
        self.frontier = [key]

    def fetch(self, keys: list[str]) -> None:
        wanted = [k for k in keys if k not in self.adjacent]
        for k in wanted:
            self.adjacent[k] = set()
        if wanted:
            for a, b, name, _ in self.store.neighbours(self.kb, wanted, self.relation_filter):
                self.adjacent[a].add(b)
                self.names[b] = name

    def step(self, k: int) -> None:
        if len(self.hops) >= MAX_SIDE_NODES:
            self.frontier = []
            return
        self.fetch(self.frontier)
        new = sorted({b for a in self.frontier for b in self.adjacent[a] if b not in self.hops})
        for b in new:
            self.hops[b] = k
        self.frontier = new


def nearest_pair(
    store: Neighbours,
    kb: str,
    source_key: str,
    target_key: str,
    max_hops: int,
    relation_filter: Iterable[str] | None,
    names: dict[str, str] | None = None,
) -> NearestPair | None:
    s, t = _Side(store, kb, source_key, relation_filter), _Side(store, kb, target_key, relation_filter)
    for k in range(1, max_hops + 1):
        s.step(k)
        t.step(k)
        name = {**(names or {}), **t.names, **s.names}
        common = s.hops.keys() & t.hops.keys()
        if common:
            m = min(common, key=lambda n: (s.hops[n] + t.hops[n], abs(s.hops[n] - t.hops[n]), name.get(n, n)))
            return NearestPair(
                source_side=name.get(m, m),
                target_side=name.get(m, m),
                hops_each=k,
                source_hops=s.hops[m],
                target_hops=t.hops[m],
                gap=0,
            )
        s.fetch(list(s.hops))  # the relations leaving the source's side, to find one that lands on the target's
        pairs = [(a, b) for a in s.hops for b in s.adjacent[a] if b in t.hops]
        if pairs:
            a, b = min(pairs, key=lambda p: (s.hops[p[0]] + t.hops[p[1]], name.get(p[0], p[0]), name.get(p[1], p[1])))
            return NearestPair(
                source_side=name.get(a, a),
                target_side=name.get(b, b),
                hops_each=k,
                source_hops=s.hops[a],
                target_hops=t.hops[b],
                gap=1,
            )
        if not s.frontier and not t.frontier:
            break
    return None
