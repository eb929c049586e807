"""Deprecated path: moved to :mod:`edgebench.formulations.placement.search.grow` (issue 45); this module re-exports its public
names and works for one release."""

import warnings

from edgebench.formulations.placement.search import grow as _new

globals().update({k: v for k, v in vars(_new).items() if not k.startswith("_")})
warnings.warn("edgebench.formulations.placement_grow is deprecated: import edgebench.formulations.placement.search.grow", DeprecationWarning, stacklevel=2)
