"""The Ray side of a run that spans more than one machine (docs/cluster.md).

Why a package of its own: Ray is an optional extra, imported only when ``[cluster]`` is on.
Nothing outside this package imports it, and importing this package itself does not import
Ray either (its modules do, on first use).
"""
