"""Placement searches (heuristics; none reports a bound): the LNS (:mod:`.lns`, placement-lns),
the column-generation LNS (:mod:`.cglns`, placement-cg-lns), the exact-history LNS
(:mod:`.histlns`, placement-history-lns), the shape LNS over time windows (:mod:`.shapelns`,
placement-shape-lns), late acceptance over serial schedules (:mod:`.lahc`,
placement-lahc; its compiled decoder :mod:`.sgs`), CP-SAT's LNS on the fixed-allocation interval
model (:mod:`.cpsat_lns`, placement-cpsat-lns), the two in turn (:mod:`.chain`,
placement-lahc-cpsat), the online rolling-horizon LNS
(:mod:`.online`, placement-lns-online), their neighbourhoods
(:mod:`.neighbourhoods`), the growing of allocations (:mod:`.grow`) and the Lagrangian list
schedule (:mod:`.lagrange_list`, placement-lagrange). Map: :mod:`edgebench.formulations.placement`."""
