"""Placement bounds: the ladder (:mod:`.ladder`), the Lagrangian (:mod:`.lagrange`), trajectory
pricing (:mod:`.trajectory`) and its compiled kernel (:mod:`.labelling`), the rounding cuts
(:mod:`.rounding`), the additive-noise bound (:mod:`.additive`), the integer relaxations
(:mod:`.timip`, :mod:`.histip` and its split by cases, :mod:`.histsplit`), the residual start-slot
bound (:mod:`.residual`) and certification (:mod:`.certify`). Map: :mod:`edgebench.formulations.placement`."""
