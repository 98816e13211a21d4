"""Connected groups of ids: near-duplicate chunks in dedup merging, version families in lineage."""

from __future__ import annotations

from collections import defaultdict


class UnionFind:
    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, item: int) -> int:
        self.parent.setdefault(item, item)
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, a: int, b: int) -> None:
        root_a, root_b = self.find(a), self.find(b)
        if root_a != root_b:  # the smaller id is the root: groups do not depend on the order of unions
            self.parent[max(root_a, root_b)] = min(root_a, root_b)

    def groups(self) -> list[set[int]]:
        """Groups of two or more."""
        by_root: dict[int, set[int]] = defaultdict(set)
        for item in list(self.parent):
            by_root[self.find(item)].add(item)
        return [group for group in by_root.values() if len(group) > 1]
