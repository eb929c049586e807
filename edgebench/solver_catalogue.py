"""The built-in solvers, as their modules register them (generated: do not edit).

Written by ``python -m edgebench.catalogue`` from the ``register(...)`` calls of
edgebench.solvers / formulations / learned; tests/test_startup.py checks that it is current.
The registry lists solvers from here and imports a solver's module only when it is needed.
"""

SOLVERS = [{'name': 'affinity',
  'module': 'edgebench.solvers.offloading_baselines',
  'kind': 'heuristic',
  'families': ['offloading'],
  'description': "The patent's greedy rule: next task by image affinity, server with the least t_trans + "
                 't_exec (holders and non-holders of the image evaluated separately)',
  'params': {},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'all-cloud',
  'module': 'edgebench.solvers.offloading_baselines',
  'kind': 'heuristic',
  'families': ['offloading'],
  'description': 'Every task on the cloud server (infeasible without one)',
  'params': {},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'ces-multi',
  'module': 'edgebench.solvers.mapping_queue',
  'kind': 'heuristic',
  'families': ['mapping'],
  'description': 'CES-Multi: rolling window, resource-fit / priority / wait score, priority ageing and a '
                 'minimum reservation for the first starving job, in the stream simulator',
  'params': {'scheduler': "str, default 'flexitask': the single-job mapping solver that places each job "
                          '(flexitask, smart, greedy-bw in process; any other registered mapping solver on a '
                          'residual instance)',
             'scheduler_params': 'dict, default {}: parameters passed to the scheduler',
             'window': 'int >= 1, default 8: rolling-window size (waiting jobs considered per pick)',
             'weights': '3 floats >= 0, default [0.3, 0.5, 0.2]: score weights of resource fit, aged '
                        'priority, wait',
             'ageing_time': "float > 0, default: the instance's mean job duration: wait that raises a job's "
                            'priority by one level',
             'reservation': 'bool, default true: minimum resource reservation for the first starving job',
             'backfill': 'bool, default true: a job may use reserved resources if it ends before every job '
                         'running at reservation time has ended (EASY backfilling; keeps the starvation '
                         'bound)'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'ces-ppo',
  'module': 'edgebench.learned.ces_ppo',
  'kind': 'learned',
  'families': ['mapping'],
  'description': 'CES-PPO (thesis): PPO actor-critic mapping task nodes and bandwidth levels with masks and '
                 'a decaying heuristic reward; shipped checkpoint',
  'params': {'checkpoint': 'str, default: the shipped checkpoint of the variant (learned/checkpoints/)',
             'greedy': 'bool, default true: argmax decisions; false samples the masked softmax with the '
                       'solver seed',
             'samples': 'int >= 0, default 0: also play this many sampled episodes (torch generator seeded '
                        'by the solver seed) and return the best of them and the greedy (or greedy=false) '
                        "one by the referee's composite"},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': ['edgebench.learned.provenance:checkpoint_records', ['ces-ppo']],
  'bound': None},
 {'name': 'ces-ppo-noheur',
  'module': 'edgebench.learned.ces_ppo',
  'kind': 'learned',
  'families': ['mapping'],
  'description': 'CES-PPO ablation trained without the heuristic reward (lambda_h = 0); shipped checkpoint',
  'params': {'checkpoint': 'str, default: the shipped checkpoint of the variant (learned/checkpoints/)',
             'greedy': 'bool, default true: argmax decisions; false samples the masked softmax with the '
                       'solver seed',
             'samples': 'int >= 0, default 0: also play this many sampled episodes (torch generator seeded '
                        'by the solver seed) and return the best of them and the greedy (or greedy=false) '
                        "one by the referee's composite"},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': ['edgebench.learned.provenance:checkpoint_records', ['ces-ppo-noheur']],
  'bound': None},
 {'name': 'cpop',
  'module': 'edgebench.solvers.offloading_baselines',
  'kind': 'heuristic',
  'families': ['offloading'],
  'description': 'CPOP (Topcuoglu et al. 2002): critical path on one server, the rest by earliest finish '
                 'time; same extensions as heft',
  'params': {},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'fifo',
  'module': 'edgebench.solvers.mapping_queue',
  'kind': 'heuristic',
  'families': ['mapping'],
  'description': 'Job queue in arrival order with head-of-line blocking; each job placed by a single-job '
                 'scheduler in the stream simulator',
  'params': {'scheduler': "str, default 'flexitask': the single-job mapping solver that places each job "
                          '(flexitask, smart, greedy-bw in process; any other registered mapping solver on a '
                          'residual instance)',
             'scheduler_params': 'dict, default {}: parameters passed to the scheduler',
             'max_running': 'int >= 1 or null, default null (no limit): at most this many jobs run at once '
                            '(1: one job after another, each on the empty network)'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'flexitask',
  'module': 'edgebench.solvers.mapping_baselines',
  'kind': 'heuristic',
  'families': ['mapping'],
  'description': 'CES baseline FlexiTask: Kubernetes-like filter (resources, load thresholds) and score '
                 '(idleness, balance, heat); highest free bandwidth level per link',
  'params': {'avg_threshold': 'float in (0, 1], default 0.8: filter, short-term average utilisation limit',
             'peak_threshold': 'float in (0, 1], default 0.9: filter, long-term peak utilisation limit',
             'short_window': 'int >= 1, default 3: utilisation samples in the short-term average',
             'long_window': 'int >= 1, default 10: utilisation samples in the long-term peak',
             'heat_window': 'int >= 1, default 8: recent node selections counted as heat',
             'weights': '3 floats >= 0, default [1.0, 1.0, 1.0]: score weights of idleness, balance, 1 - '
                        'heat'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'ga',
  'module': 'edgebench.solvers.ga',
  'kind': 'metaheuristic',
  'families': ['placement', 'mapping', 'offloading'],
  'description': 'Random-key genetic algorithm on DEAP (elitism, tournaments, biased uniform crossover, '
                 "reset/Gaussian mutation, immigrants) over the family's decoder; anytime trace",
  'params': {'population': 'int >= 2: genomes per generation; default 100',
             'max_evaluations': 'int >= 1 or null: evaluation budget (null: 20000 without a time limit, '
                                'unlimited with one); default None',
             'elite': 'int in [0, population - 1]: best distinct genomes kept (DEAP hall of fame); default 2',
             'tournament': 'int >= 1: tournament size of the parent selection; default 3',
             'crossover': 'float in [0, 1]: probability that a child comes from crossover; default 0.9',
             'bias': "float in [0, 1]: biased uniform crossover, probability of the better parent's key; "
                     'default 0.7',
             'mutation': 'float in [0, 1] or null: per-key mutation probability (null: 1 / dim); default '
                         'None',
             'reset': 'float in [0, 1]: probability that a mutated key is redrawn (else a Gaussian step); '
                      'default 0.5',
             'sigma': 'float in [0, 1]: deviation of the Gaussian mutation step; default 0.1',
             'immigrants': 'float in [0, 0.5]: fraction of each generation that is fresh random genomes; '
                           'default 0.05',
             'stall': 'int >= 1 or null: stop after this many generations without improvement; default None',
             'warm_start': 'registered heuristic solver name or null: its solution seeds the population; '
                           'default None'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'greedy-bw',
  'module': 'edgebench.solvers.mapping_baselines',
  'kind': 'heuristic',
  'families': ['mapping'],
  'description': 'Greedy bandwidth satisfaction: heavy-communicating task pairs together or adjacent, then '
                 'an LP (or water-filling) maximising D_BW',
  'params': {'bandwidth': "'lp' (default: maximise the job's D_BW) or 'waterfill' (max-min fair "
                          'satisfaction)'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'heft',
  'module': 'edgebench.solvers.offloading_baselines',
  'kind': 'heuristic',
  'families': ['offloading'],
  'description': 'HEFT (Topcuoglu et al. 2002): upward rank, insertion-based earliest finish time, extended '
                 'to cpu/mem capacity, image pulls and workflow arrivals',
  'params': {},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'mapping-exact',
  'module': 'edgebench.formulations.mapping',
  'kind': 'exact',
  'families': ['mapping'],
  'description': 'Exact CES mapping + bandwidth (thesis (4-1)-(4-20)): branch and bound with exact bandwidth '
                 'sub-problems, or one MILP through OR-Tools / PuLP / Pyomo, or CP-SAT; every job placed, '
                 'all simultaneously active',
  'params': {'objective': "composite | dbw | L (default composite): what is optimised; the solution's "
                          "objective is its value (composite = referee primary, dbw = objectives['D_BW'], L "
                          "= objectives['L'])",
             'backend': 'auto | bnb | ortools-cpsat | ortools-scip | ortools-cbc | ortools-highs | pulp-cbc '
                        '| pulp-highs | pyomo-highs (default auto: bnb for composite / L with shortest-path '
                        'routing, else ortools-highs)',
             'threads': 'int (default 1): solver threads (MILP / CP-SAT backends)',
             'exact': 'bool (default true): MILP backends close the std gap by outer approximation; false '
                      'solves the MAD proxy once (a valid bound, status feasible unless proven)',
             'warm_start': 'bool (default true): MILP backends (balance objectives, shortest-path routing) '
                           "start the outer approximation from branch and bound's best mapping within 10 % "
                           'of the time limit, with tangent cuts at it and an objective cutoff; the MILP '
                           'still proves its own bound'},
  'types': {},
  'choices': {'objective': ['composite', 'dbw', 'L'],
              'backend': ['auto',
                          'bnb',
                          'ortools-cpsat',
                          'ortools-scip',
                          'ortools-cbc',
                          'ortools-highs',
                          'pulp-cbc',
                          'pulp-highs',
                          'pyomo-highs']},
  'bounds': {'threads': [1, None]},
  'default_time_limit': 300.0,
  'proves': True,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': 'instance'},
 {'name': 'mapping-pareto',
  'module': 'edgebench.formulations.mapping',
  'kind': 'exact',
  'families': ['mapping'],
  'description': 'Pareto front of L against D_BW by the epsilon-constraint method (exact points); the '
                 "solution is the best-composite point, stats['pareto'] holds the front",
  'params': {'points': 'int (default 5): epsilon-constraint problems including the two anchors',
             'backend': 'auto | bnb | ortools-cpsat | ortools-scip | ortools-cbc | ortools-highs | pulp-cbc '
                        '| pulp-highs | pyomo-highs (default auto: bnb for composite / L with shortest-path '
                        'routing, else ortools-highs)',
             'threads': 'int (default 1): solver threads (MILP / CP-SAT backends)',
             'exact': 'bool (default true): MILP backends close the std gap by outer approximation; false '
                      'solves the MAD proxy once (a valid bound, status feasible unless proven)'},
  'types': {},
  'choices': {'backend': ['auto',
                          'bnb',
                          'ortools-cpsat',
                          'ortools-scip',
                          'ortools-cbc',
                          'ortools-highs',
                          'pulp-cbc',
                          'pulp-highs',
                          'pyomo-highs']},
  'bounds': {'threads': [1, None], 'points': [1, None]},
  'default_time_limit': 300.0,
  'proves': True,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': 'instance'},
 {'name': 'mdp-vi',
  'module': 'edgebench.solvers.offloading_mdp',
  'kind': 'mdp',
  'families': ['offloading'],
  'description': "The patent's MDP (state: offloaded set, frontier servers, next task; reward -(t_trans + "
                 't_exec)) solved by value iteration, executed by the event simulator',
  'params': {'gamma': "float in [0, 1], default 0.5: discount factor (the patent's example uses 0.5)",
             'tol': 'float > 0, default 1e-09: value iteration stops when max |V_new - V| < tol',
             'max_states': 'int >= 1, default 2000: largest enumerated state space; beyond it, a receding '
                           'horizon (states more than H decisions ahead aggregated into one of value 0)',
             'max_sweeps': 'int >= 1, default 100000: safety cap on Bellman sweeps per solve'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': 300.0,
  'proves': True,
  'open_params': False,
  'check': True,
  'applies': False,
  'provenance': None,
  'bound': 'instance'},
 {'name': 'min',
  'module': 'edgebench.solvers.placement_baselines',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': 'TapFinger baseline Min: random pending task at its minimum allocation',
  'params': {},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'nearest-edge',
  'module': 'edgebench.solvers.offloading_baselines',
  'kind': 'heuristic',
  'families': ['offloading'],
  'description': "Every task on the edge server nearest to its workflow's source that can host it (the cloud "
                 'when none can)',
  'params': {},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'offloading-cpsat',
  'module': 'edgebench.formulations.offloading',
  'kind': 'exact',
  'families': ['offloading'],
  'description': 'CP-SAT interval model (optional intervals, cumulative capacities, delay-aware precedence) '
                 'in integer ticks with durations rounded up',
  'params': {'threads': 'int, CP-SAT workers (default 1)',
             'time_scale': "ticks per second, or 'auto' (default): the smallest 10**k <= 10**5 making every "
                           'duration, delay and release integral, else 10**5; durations/delays/releases are '
                           "rounded up (then 'optimal' only when the true-problem bound meets the objective)",
             'horizon': 'float or None: every task must finish by this absolute time (default None)',
             'hint': 'bool, seed CP-SAT with a HEFT-style list schedule and tighten the horizon with it '
                     '(default True)',
             'edge_form': "'same' (default, alias 'auto': a co-location literal per edge carrying the "
                          "smallest delay between different servers, larger delays per server pair), 'pairs' "
                          '(one delay constraint per server pair, enforced by both presence literals) or '
                          "'linear' (one per source server)",
             'cuts': 'bool, add the heads / tails of every task per host and the combinatorial bound as a '
                     'floor on the objective (docs/formulations/offloading.md §4a; default True)',
             'lns': 'float in [0, 1): share of the time limit given to a large-neighbourhood search around '
                    "CP-SAT's incumbent when CP-SAT has not proved optimality in the rest (0: off; default "
                    '0.75; no effect without a time limit)',
             'probe': 'float in [0, 1): share of the limit reserved at its end for objective-cap probes that '
                      "raise the proven bound; when the search of 'lns' stalls earlier, the probes get at "
                      'least half of the time left (docs/formulations/offloading.md §4b; 0: off; default '
                      '0.05; no effect without a time limit)',
             'fine_proof': "bool (default true; with time_scale 'auto'): when CP-SAT proved the ceiled "
                           'problem optimal but the rounding adjustment keeps the true bound below the '
                           'objective, prove again at 10**8 ticks in the time left '
                           '(docs/formulations/offloading.md §2)',
             'cpsat_params': "dict of extra CP-SAT parameters (e.g. {'linearization_level': 2}); default "
                             'none',
             'log': 'bool, print the CP-SAT search log (default False)'},
  'types': {},
  'choices': {'edge_form': ['auto', 'same', 'pairs', 'linear']},
  'bounds': {'threads': [1, None], 'lns': [0, 0.95], 'probe': [0, 0.95]},
  'default_time_limit': 300.0,
  'proves': True,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': 'instance'},
 {'name': 'offloading-milp',
  'module': 'edgebench.formulations.offloading',
  'kind': 'exact',
  'families': ['offloading'],
  'description': 'continuous-time disjunctive MILP with resource flows (one LinearModel through OR-Tools, '
                 'PuLP or Pyomo)',
  'params': {'backend': 'one of ortools-scip, ortools-cbc, ortools-highs, pulp-cbc, pulp-highs, pyomo-highs '
                        '(default ortools-scip)',
             'threads': 'int (default 1)',
             'horizon': 'float or None: every task must finish by this absolute time (default None)',
             'mip_gap': 'relative MIP gap at which the backend stops (default 1e-9)',
             'heuristic_horizon': "bool, tighten the big-M horizon with a list schedule's objective (default "
                                  'True)',
             'log': "bool, print the backend's log (default False)"},
  'types': {},
  'choices': {'backend': ['ortools-scip',
                          'ortools-cbc',
                          'ortools-highs',
                          'pulp-cbc',
                          'pulp-highs',
                          'pyomo-highs']},
  'bounds': {'threads': [1, None], 'mip_gap': [0, None]},
  'default_time_limit': 300.0,
  'proves': True,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': 'instance'},
 {'name': 'optimus',
  'module': 'edgebench.solvers.placement_baselines',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': 'TapFinger baseline Optimus: fitted speed model, greedy marginal-gain re-allocation every '
                 'step',
  'params': {'gain': "'per-unit' (default: the estimated remaining-time drop divided by the units held, as "
                     "the authors' code) or 'drop' (the drop itself, as the Optimus paper: the earlier "
                     'default)',
             'fit': "'authors' (default: the authors' pre-run: unbounded least squares over the whole grid, "
                    "zero speeds below the minimum included), 'authors-transposed' (their pre-run as their "
                    'code runs it: CPU and GPU counts swapped against the observations, which reproduces '
                    "their saved figures, docs/calibration.md) or 'bounded' (coefficients >= 0, feasible "
                    "grid only: the suite's earlier default)",
             'fit_max': "int >= 1 or null (default null: every allocation up to the largest cluster's "
                        'capacity): profile and fit the speed model on allocations 0..fit_max per resource '
                        "only; the authors' pre-run used 0..16 on every setting (16 for like-for-like runs "
                        'on hetero-6, docs/calibration.md)'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'optimus-np',
  'module': 'edgebench.solvers.placement_baselines',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': "Optimus without re-allocation: greedy allocation at start, fixed for the task's life",
  'params': {'gain': "'per-unit' (default: the estimated remaining-time drop divided by the units held, as "
                     "the authors' code) or 'drop' (the drop itself, as the Optimus paper: the earlier "
                     'default)',
             'fit': "'authors' (default: the authors' pre-run: unbounded least squares over the whole grid, "
                    "zero speeds below the minimum included), 'authors-transposed' (their pre-run as their "
                    'code runs it: CPU and GPU counts swapped against the observations, which reproduces '
                    "their saved figures, docs/calibration.md) or 'bounded' (coefficients >= 0, feasible "
                    "grid only: the suite's earlier default)",
             'fit_max': "int >= 1 or null (default null: every allocation up to the largest cluster's "
                        'capacity): profile and fit the speed model on allocations 0..fit_max per resource '
                        "only; the authors' pre-run used 0..16 on every setting (16 for like-for-like runs "
                        'on hetero-6, docs/calibration.md)',
             'rule': "'suite' (default: the greedy over the free resources for the tasks started in the "
                     "step) or 'authors' (the authors' non_preemptable_optimus: a greedy pre-allocation of "
                     'the free resources over all pending tasks, the one holding most GPUs starts with its '
                     'share minus one unit in their step loop: clusters in reverse index order, one start '
                     'per cluster and call; docs/calibration.md)'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'peft',
  'module': 'edgebench.solvers.offloading_baselines',
  'kind': 'heuristic',
  'families': ['offloading'],
  'description': 'PEFT (Arabnejad & Barbosa 2014): optimistic cost table, earliest finish + OCT; same '
                 'extensions as heft',
  'params': {},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'placement-bnp',
  'module': 'edgebench.formulations.placement.bnp',
  'kind': 'exact',
  'families': ['placement'],
  'description': 'Bound (8): branch-and-price on the exact-trajectory master of (6) with its rounding cuts '
                 "(branching on a task's cluster, first start and held allocation; best bound first; "
                 'optionally identical tasks in arrival order), pruned by the referee value of a warm start; '
                 "reports the warm start and the tree's bound",
  'params': {'warm_start': "'best-known' (the shipped best known; default) or a placement solution file",
             'nodes': 'int: nodes solved at most (default 10000)',
             'memory_mb': 'number: a memory budget, MiB: the tree stops (status timeout, with its bound) '
                          'once the address space passes 80% of it (default none: only the limits in force, '
                          "RLIMIT_AS and a memory cgroup's, each at 80%)",
             'root_work': 'int: label extensions the root bound (6) may spend before its cut rounds (default '
                          "4e+09; testbed-v2's column generation converges only past it)",
             'symmetry': 'bool: on a noise-free instance, search only the schedules that start identical '
                         'tasks in arrival order (start splits first, applied to the class-mates too; '
                         'default false)'},
  'types': {},
  'choices': {},
  'bounds': {'nodes': [1, None], 'memory_mb': [1, None], 'root_work': [1, None]},
  'default_time_limit': 300.0,
  'proves': True,
  'open_params': False,
  'check': False,
  'applies': True,
  'provenance': None,
  'bound': 'instance'},
 {'name': 'placement-cg-lns',
  'module': 'edgebench.formulations.placement.search.cglns',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': "Column-generation LNS: bound (6)'s column generation yields allocation histories "
                 '(re-allocations and pauses included, finishes re-simulated by the referee); window '
                 "neighbourhoods of a start schedule re-choose the freed tasks' histories by a "
                 'set-partitioning MIP (HiGHS); scored by the referee',
  'params': {'block': 'int: tasks freed per neighbourhood (default 30)',
             'sub_limit': 'seconds per sub-MIP (default 10.0)',
             'iterations': 'int: stop after this many neighbourhoods (default: the time limit; 200 without '
                           'one)',
             'rounds': 'int: column-generation rounds at most (default 300)',
             'cut_rounds': 'int: rounds of rounding cuts in the column generation (default 0)',
             'fitted': "bool: per neighbourhood, also each freed task's fastest histories in the capacity "
                       'the others leave (default true)',
             'warm_start': 'start from this schedule instead of sjf / optimus: a placement solution file, '
                           "'best-known' or 'lagrangian' (as for placement-lns)"},
  'types': {},
  'choices': {},
  'bounds': {'block': [1, None],
             'sub_limit': [0.1, None],
             'iterations': [0, None],
             'rounds': [1, None],
             'cut_rounds': [0, None]},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': True,
  'provenance': None,
  'bound': None},
 {'name': 'placement-cpsat-lns',
  'module': 'edgebench.formulations.placement.search.cpsat_lns',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': "CP-SAT's large-neighbourhood search (its scheduling, graph and random neighbourhoods, "
                 'interleaved on the given threads) on the fixed-allocation interval model, from a warm '
                 "start's fixed version; then re-allocating moves; scored by the referee",
  'params': {'threads': 'int: CP-SAT workers the interleaved subsolvers share (default 1)',
             'full': "bool: also CP-SAT's full-problem subsolvers (default false: the LNS ones only)",
             'work': "float: CP-SAT's deterministic time limit (max_deterministic_time; default: the time "
                     'limit, 30 without one); with it the same seed gives the same schedule',
             'warm_start': 'start from this schedule instead of sjf / optimus: a placement solution file, '
                           "'best-known' or 'lagrangian' (as for placement-lns)"},
  'types': {},
  'choices': {},
  'bounds': {'threads': [1, 64], 'work': [0.0, None]},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': True,
  'provenance': None,
  'bound': None},
 {'name': 'placement-exact',
  'module': 'edgebench.formulations.placement.exact',
  'kind': 'exact',
  'families': ['placement'],
  'description': "Exact model of the referee's own problem (re-allocation, pauses, switching loss, noise): "
                 'A* over joint step states with per-task completion bounds; its bound holds for every '
                 'referee-feasible schedule',
  'params': {'max_nodes': 'int: stop after this many search nodes (default 2000000)',
             'reduce': 'bool: the proven reductions (minimal allocation per rate class, no pause-start); '
                       'default: where the monotonicity lemma holds',
             'milp_share': "share of the time limit for the fixed-allocation MILP's incumbent (default 0.3; "
                           '0: the greedy only)',
             'root': 'bool: the root bound of the integer time-indexed relaxation R (default true)',
             'root_share': 'share of the time left after the MILP for R and (7) (default 0.5)',
             'histip': 'bool: bound (7), the exact-history integer master, after R where R stays below U '
                       '(default true)',
             'upper': "int: prove 'no schedule of value <= upper - 1' at the root (default: the incumbent's "
                      'value; any value is sound)',
             'timip': 'bool: R at the root before (7) (default true; false: (7) alone, with all of the '
                      "root's time; R may take it all, or crash, on 192-task instances)",
             'histip_columns': 'int: (7) declines past this many columns (default 50000)',
             'histip_labels': 'int: (7) declines past this many live labels (default 400000)',
             'histip_split': "number in [0.5, 1]: (7) by cases split at this share of its knapsack's slack, "
                             "the same bound with the small pool and one task's large columns in memory at a "
                             'time (default: unsplit)',
             'histip_checkpoint': 'path of a .json file: with histip_split, the cases solved so far are kept '
                                  'there after each case, and a run with the same arguments replays them and '
                                  'goes on (default: none)',
             'memory_mb': 'number: a memory budget, MiB: the search stops (status timeout, with its bound) '
                          'once the address space passes 80% of it (default none: only the limits in force, '
                          "RLIMIT_AS and a memory cgroup's, each at 80%)"},
  'types': {},
  'choices': {},
  'bounds': {'max_nodes': [1, None],
             'milp_share': [0, 1],
             'root_share': [0, 1],
             'upper': [1, None],
             'memory_mb': [1, None],
             'histip_columns': [1, 10000000],
             'histip_labels': [1, 100000000],
             'histip_split': [0.5, 1]},
  'default_time_limit': 300.0,
  'proves': True,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': 'instance'},
 {'name': 'placement-fifo',
  'module': 'edgebench.solvers.placement_baselines',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': 'Earliest arrived pending task that fits, at its minimum allocation',
  'params': {},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'placement-history-lns',
  'module': 'edgebench.formulations.placement.search.histlns',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': 'Exact-history LNS: windows of tasks consecutive in arrival order re-choose among EVERY '
                 'undominated allocation history (pauses and re-allocations included) that fits beside the '
                 "kept tasks and finishes within a slack of the task's current finish (bound (7)'s "
                 'labelling, finishes re-simulated by the referee), by a set-partitioning MIP (HiGHS); '
                 'scored by the referee',
  'params': {'block': 'int: tasks freed per window (default 12)',
             'slack': "int: steps a freed task's finish may grow (default 1)",
             'sub_limit': 'seconds per sub-MIP (default 15.0)',
             'iterations': 'int: stop after this many windows (default: the time limit; 50 without one)',
             'max_columns': 'int: per task and cluster, histories before the enumeration is capped (default '
                            '20000)',
             'max_labels': 'int: per task and cluster, live labels before the enumeration is capped (default '
                           '20000)',
             'max_changes': 'int: list only histories with at most this many changes after the first start '
                            '(allocation switches, pauses, resumes; default: all histories)',
             'max_block': 'int: once every window of the current size gave nothing since the last '
                          'improvement, windows grow by 4 tasks up to this many, then the search stops '
                          '(default: every task)',
             'windows': "str: 'arrival' (tasks consecutive in arrival order; default), 'running' (per task, "
                        "the tasks of its cluster whose runs are nearest its own) or 'both'",
             'warm_start': 'start from this schedule instead of sjf / optimus: a placement solution file, '
                           "'best-known' or 'lagrangian' (as for placement-lns)"},
  'types': {},
  'choices': {'windows': ['arrival', 'running', 'both']},
  'bounds': {'block': [1, 200],
             'slack': [0, 50],
             'sub_limit': [0.1, None],
             'iterations': [0, None],
             'max_columns': [1, 1000000],
             'max_labels': [1, 10000000],
             'max_changes': [0, 1000],
             'max_block': [1, 100000]},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': True,
  'provenance': None,
  'bound': None},
 {'name': 'placement-lagrange',
  'module': 'edgebench.formulations.placement.search.lagrange_list',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': 'Lagrangian-guided list schedule: the cheapest priced trajectories under the final '
                 'multipliers of the Lagrangian bound (4) give each task an order (alpha-points), a cluster '
                 'and an allocation; the best of several list schedules by the referee',
  'params': {'samples': 'int: seeded random alpha-point orders after the fixed ones (default 8; cut by the '
                        'time limit)',
             'rounds': 'int: column-generation rounds of the multipliers (default 200)'},
  'types': {},
  'choices': {},
  'bounds': {'samples': [0, None], 'rounds': [1, None]},
  'default_time_limit': 300.0,
  'proves': False,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'placement-lahc',
  'module': 'edgebench.formulations.placement.search.lahc',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': 'Late-acceptance hill climbing over serial schedules: a task order and one fixed allocation '
                 'option per task, decoded by earliest feasible starts (every later task moves up when one '
                 "leaves a queue); moves change a task's option and place in the order; scored by the "
                 'referee',
  'params': {'history': 'int: late-acceptance list length (default 1000)',
             'window': 'int: the farthest a move shifts a task in the order (default 20)',
             'lift': "float: the late list starts at the start's value times 1 + lift (default 0: plain late "
                     'acceptance; from a local optimum such as a best known it then only walks its plateau)',
             'pieces': 'int: 1 (default) fixed options only; 2 also every history of one change (a first '
                       'dominant allocation for 1..steps-1 steps, then another of the cluster)',
             'iterations': 'int: stop after this many moves (default: the time limit; 100000 without one)',
             'warm_start': 'start from this schedule instead of sjf / optimus: a placement solution file, '
                           "'best-known' or 'lagrangian' (as for placement-lns)"},
  'types': {},
  'choices': {},
  'bounds': {'history': [1, 10000000],
             'window': [1, 100000],
             'iterations': [0, None],
             'pieces': [1, 2],
             'lift': [0.0, 1.0]},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': True,
  'provenance': None,
  'bound': None},
 {'name': 'placement-lahc-cpsat',
  'module': 'edgebench.formulations.placement.search.chain',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': "Late acceptance over serial schedules and CP-SAT's LNS on the fixed-allocation interval "
                 "model, in turn, each from the other's best; then re-allocating moves; scored by the "
                 'referee',
  'params': {'rounds': 'int: rounds of late acceptance then CP-SAT (default: until the time limit; 2 without '
                       'one)',
             'round_seconds': "float: a round's wall-clock length under a time limit (default 600)",
             'lahc_share': 'float: the part of a round late acceptance gets (default 0.5)',
             'iterations': 'int: late-acceptance moves per round (default: its share of the round; 20000 '
                           'without a time limit)',
             'work': 'float: CP-SAT deterministic seconds per round (default: the rest of the round; 5 '
                     'without a time limit); with rounds and iterations the same seed gives the same '
                     'schedule',
             'history': 'int: late-acceptance list length (default 1000)',
             'window': 'int: the farthest a move shifts a task in the order (default 20)',
             'threads': 'int: CP-SAT workers (default 1)',
             'finish_share': "float: the last part of the time for placement-history-lns's exact-history "
                             'windows from the result (default 0: none)',
             'finish_iterations': 'int: those windows at most (default: their share of the time; 20 without '
                                  'a time limit)',
             'warm_start': 'start from this schedule instead of sjf / optimus: a placement solution file, '
                           "'best-known' or 'lagrangian' (as for placement-lns)"},
  'types': {},
  'choices': {},
  'bounds': {'rounds': [1, None],
             'round_seconds': [1.0, None],
             'lahc_share': [0.0, 1.0],
             'iterations': [0, None],
             'work': [0.0, None],
             'history': [1, 10000000],
             'window': [1, 100000],
             'threads': [1, 64],
             'finish_share': [0.0, 0.95],
             'finish_iterations': [0, None]},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': True,
  'provenance': None,
  'bound': None},
 {'name': 'placement-list-window',
  'module': 'edgebench.solvers.placement_list_window',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': "Online list scheduling by the agents' rules: every step, the tasks of the clusters' "
                 'pending windows, in arrival order, each get the cluster, allocation and start that finish '
                 'earliest given the running and earlier planned tasks; each cluster starts its tasks '
                 'planned for now (window, free resources, one start per step in the single variant)',
  'params': {'resource_weight': "float in [0, 1000]: rank a task's candidates by finish + w x its share of "
                                "the cluster's resource-time instead of the finish (default 0: earliest "
                                'finish)'},
  'types': {},
  'choices': {},
  'bounds': {'resource_weight': [0, 1000]},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'placement-lns',
  'module': 'edgebench.formulations.placement.search.lns',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': 'Large-neighbourhood search: the best of placement-milp / sjf / optimus (or a warm start), '
                 'improved by re-solving parts of the schedule with the fixed-allocation MILP (HiGHS), then '
                 're-allocating moves; scored by the referee',
  'params': {'block': 'int: tasks freed per neighbourhood at first (default 24; grows when stuck)',
             'slack': 'int: start window of a freed task, steps after arrival (default 8)',
             'stall': 'int: neighbourhoods without improvement before the blocks grow (default 6)',
             'sub_limit': 'seconds per sub-problem (default 10.0)',
             'start_share': "share of the time limit for placement-milp's start (default 0.3)",
             'iterations': 'int: stop after this many neighbourhoods (default: the time limit; 200 without '
                           'one)',
             'moves': 'neighbourhood moves: classic, adaptive, window, cluster, wait, related (default '
                      'classic; docs/formulations/placement-search.md)',
             'warm_start': 'start from this schedule instead of the start solvers: a placement solution '
                           "file, 'best-known' for the instance's shipped best-known solution, or "
                           "'lagrangian' for the Lagrangian-guided list schedule (placement-lagrange)",
             'grow': 'bool: after the search, re-allocating moves scored by the referee (default true; '
                     'formulations/placement/search/grow.py)',
             'cutoff': 'sub-MILP stopping rule: off, bound, first (default off; off: to optimality; bound: '
                       'only solutions better than the incumbent; first: stop at the first)'},
  'types': {},
  'choices': {'moves': ['classic', 'adaptive', 'window', 'cluster', 'wait', 'related'],
              'cutoff': ['off', 'bound', 'first']},
  'bounds': {'block': [2, None],
             'slack': [1, None],
             'stall': [1, None],
             'sub_limit': [0.1, None],
             'start_share': [0.05, 0.9],
             'iterations': [0, None]},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'placement-lns-online',
  'module': 'edgebench.formulations.placement.search.online',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': 'Online rolling-horizon LNS (non-clairvoyant): at every arrival step the LNS plans the '
                 "tasks known by then (the starts made before kept), and the plan's starts before the next "
                 'arrival are committed; scored by the referee',
  'params': {'iterations': 'int: LNS neighbourhoods per plan (default 4; 0: the list-scheduling completion '
                           'alone)'},
  'types': {},
  'choices': {},
  'bounds': {'iterations': [0, None]},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'placement-lns-window',
  'module': 'edgebench.solvers.placement_lns_window',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': "Online rolling-horizon LNS played in the simulator by the agents' rules: at every arrival "
                 'step the LNS plans the tasks known by then, and each cluster starts its due planned tasks '
                 'when the pending window, its free resources and the one-start-per-step rule allow; the '
                 'agents can play its schedule action for action',
  'params': {'iterations': 'int: LNS neighbourhoods per plan (default 4; 0: the list-scheduling completion '
                           'alone)',
             'played': "bool: at each arrival keep the LNS plan only when its play by the agents' rules (on "
                       "a copy of the simulator, to its tasks' end) beats the list-scheduling plan's "
                       '(default false)'},
  'types': {},
  'choices': {},
  'bounds': {'iterations': [0, None]},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'placement-milp',
  'module': 'edgebench.formulations.placement.milp',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': "Fixed-allocation MILP (TapFinger's offline problem (1)-(8)), a restriction of the "
                 "referee's re-allocating problem: optimal over fixed-allocation schedules only, a heuristic "
                 "for the referee's problem; its bound is the restriction's (stats restriction_bound), never "
                 "reported as the instance's (placement-exact's is)",
  'params': {'backend': 'one of ortools-scip, ortools-cbc, ortools-highs, ortools-cpsat, pulp-cbc, '
                        'pulp-highs, pyomo-highs, highspy, cpsat-intervals (default highspy)',
             'threads': 'solver threads (default 1)',
             'horizon': 'int: every task must finish by this step (default: the proven horizon from the '
                        'greedy upper bound; a shorter one is reported as binding)',
             'lp_bound': 'bool: solve the LP relaxation for a bound when the MILP does not close (default '
                         'true)',
             'window': "initial start slack per task: int, 'auto' (4, or more where the best known schedule "
                       "waits longer) or 'full' (the plain model over the whole proven horizon)",
             'mip_gap': 'relative MIP gap at which the backend stops (default 1e-9: prove optimality)',
             'improve': 'bool: local search over blocks of 32 tasks before the exact solve (default true)',
             'rings': 'int: coarse 2-step late-start variables after each window (default 0)',
             'lp_widen': 'bool: before the first MILP, widen the windows of the tasks whose late variable '
                         "the windowed model's LP relaxation uses, until it uses none (default true)"},
  'types': {'window': "Union[int, Literal['auto', 'full']]"},
  'choices': {'backend': ['ortools-scip',
                          'ortools-cbc',
                          'ortools-highs',
                          'ortools-cpsat',
                          'pulp-cbc',
                          'pulp-highs',
                          'pyomo-highs',
                          'highspy',
                          'cpsat-intervals']},
  'bounds': {'threads': [1, None],
             'mip_gap': [0, None],
             'horizon': [1, None],
             'rings': [0, None],
             'window': [0, None]},
  'default_time_limit': 300.0,
  'proves': False,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': 'restriction'},
 {'name': 'placement-shape-lns',
  'module': 'edgebench.formulations.placement.search.shapelns',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': 'Shape LNS: windows in time free the tasks whose first start lies in a span of steps, on '
                 'every cluster; interchangeable tasks choose together among shapes (histories relative to '
                 'their start: dominant fixed allocations, two-piece re-allocations, the current histories; '
                 'finishes by the referee) at starts near their arrivals or current starts, by an integer '
                 'counting MIP (HiGHS); scored by the referee',
  'params': {'length': 'int: steps of first starts a window frees (default 16)',
             'reach': 'int: a freed task may start within this many steps after its arrival or around its '
                      'current start (default 4)',
             'sub_limit': 'seconds per sub-MIP (default 60.0)',
             'iterations': 'int: stop after this many windows (default: the time limit; 20 without one)',
             'warm_start': 'start from this schedule instead of sjf / optimus: a placement solution file, '
                           "'best-known' or 'lagrangian' (as for placement-lns)"},
  'types': {},
  'choices': {},
  'bounds': {'length': [1, 10000], 'reach': [0, 1000], 'sub_limit': [0.1, None], 'iterations': [0, None]},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': True,
  'provenance': None,
  'bound': None},
 {'name': 'ppo-balance',
  'module': 'edgebench.learned.ces_ppo',
  'kind': 'learned',
  'families': ['mapping'],
  'description': 'PPO-Balance baseline: RL node choice trained for load balance, bandwidth by node-degree '
                 'importance; shipped checkpoint',
  'params': {'checkpoint': 'str, default: the shipped checkpoint of the variant (learned/checkpoints/)',
             'greedy': 'bool, default true: argmax decisions; false samples the masked softmax with the '
                       'solver seed',
             'samples': 'int >= 0, default 0: also play this many sampled episodes (torch generator seeded '
                        'by the solver seed) and return the best of them and the greedy (or greedy=false) '
                        "one by the referee's composite"},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': ['edgebench.learned.provenance:checkpoint_records', ['ces-ppo-balance']],
  'bound': None},
 {'name': 'pso',
  'module': 'edgebench.solvers.pso',
  'kind': 'metaheuristic',
  'families': ['placement', 'mapping', 'offloading'],
  'description': 'Particle swarm over random keys (continuous PSO with decoding; ring or global topology, '
                 "re-scatter on stagnation) sharing the GA's decoders; anytime trace",
  'params': {'particles': 'int >= 2: swarm size; default 100',
             'max_evaluations': 'int >= 1 or null: evaluation budget (null: 20000 without a time limit, '
                                'unlimited with one); default None',
             'inertia': 'float in [0, 1]: inertia weight w; default 0.7298',
             'cognitive': "float in [0, 4]: c1, pull towards the particle's best; default 1.49618",
             'social': "float in [0, 4]: c2, pull towards the neighbourhood's best; default 1.49618",
             'vmax': 'float in (0, 1]: velocity clamp per key; default 0.2',
             'topology': "global | ring: neighbourhood of the social term; default 'ring'",
             'neighbours': 'int >= 1: ring topology, particles on each side; default 2',
             'restart': 'int >= 1 or null: re-scatter the swarm after this many iterations without '
                        'improvement; default 30',
             'stall': 'int >= 1 or null: stop after this many iterations without improvement; default None',
             'warm_start': 'registered heuristic solver name or null: its solution becomes one particle; '
                           'default None'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'random',
  'module': 'edgebench.solvers.random_baseline',
  'kind': 'heuristic',
  'families': ['placement', 'mapping', 'offloading'],
  'description': 'Seeded random policy: random task/node/server and random valid allocation or bandwidth',
  'params': {'attempts': 'int >= 1, default 200: mapping only, random tries per job before it waits',
             'rounds': "placement only: 'pack' (default: clusters in random order start random tasks until "
                       "nothing fits) or 'authors' (the TapFinger authors' step loop: clusters in index "
                       'order draw one pending task each per pass, conflicts and a drawn void allocation '
                       'start nothing, a step ends after a pass that starts nothing; docs/calibration.md)'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'sjf',
  'module': 'edgebench.solvers.placement_baselines',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': 'ORACLE shortest-job-first (true durations from the instance), minimum allocation',
  'params': {},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': False,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'smart',
  'module': 'edgebench.solvers.mapping_baselines',
  'kind': 'heuristic',
  'families': ['mapping'],
  'description': 'CES baseline Smart: weighted efficiency / balance / connectivity / margin score; bandwidth '
                 'by link importance',
  'params': {'weights': '4 floats >= 0, default [0.25, 0.25, 0.25, 0.25]: efficiency, balance, connectivity, '
                        'margin',
             'ideal_utilisation': "float in (0, 1), default 0.625: the efficiency term's target utilisation"},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'strict-priority',
  'module': 'edgebench.solvers.mapping_queue',
  'kind': 'heuristic',
  'families': ['mapping'],
  'description': 'Job queue by strict priority (skip what does not fit, no ageing) in the stream simulator',
  'params': {'scheduler': "str, default 'flexitask': the single-job mapping solver that places each job "
                          '(flexitask, smart, greedy-bw in process; any other registered mapping solver on a '
                          'residual instance)',
             'scheduler_params': 'dict, default {}: parameters passed to the scheduler'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'tapfinger',
  'module': 'edgebench.learned.tapfinger',
  'kind': 'learned',
  'families': ['placement'],
  'description': 'TapFinger multi-agent policy (heterogeneous graph attention encoder, pointer, Bayes '
                 'conflicts) fine-tuned by MAPPO after a behaviour-cloning warm start [trained by hetero-6 '
                 'multi: bc+mappo, 61440 env steps; hetero-6 single: bc+mappo, 194560 env steps; synthetic-3 '
                 'multi: bc+mappo, 28160 env steps; synthetic-6 multi: bc+mappo, 30720 env steps; testbed '
                 'single: bc+mappo, 16384 env steps]',
  'params': {'checkpoint': "path of a TapFinger checkpoint (.pt; default: the shipped one for the instance's "
                           'preset and variant, learned/checkpoints/)',
             'greedy': 'bool, default True: argmax actions (False: sample with the solver seed)',
             'samples': 'int 0..10000, default 0: after the first episode (as `greedy` says), play this many '
                        'sampled episodes of the same policy (seeds from (seed, k)) and keep the schedule '
                        'the referee scores lowest; stops at the time limit with the best complete one',
             'temperature': 'float in (0, 10], default 1: sampled acting (`samples`, or `greedy` false) '
                            'draws from the softmax of the logits / temperature; below 1 nearer the greedy '
                            'choice'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': True,
  'provenance': ['edgebench.learned.provenance:checkpoint_records', ['tapfinger-mappo']],
  'bound': None},
 {'name': 'tapfinger-bc',
  'module': 'edgebench.learned.tapfinger',
  'kind': 'learned',
  'families': ['placement'],
  'description': 'TapFinger policy by imitation only (behaviour cloning, some DAgger) of the exact model '
                 'placement-milp; no reinforcement learning [trained by hetero-6 multi: bc; hetero-6 single: '
                 'bc+dagger; sjf-ablation single: bc; synthetic-3 multi: bc; synthetic-3 single: bc; testbed '
                 'multi: bc; testbed single: bc]',
  'params': {'checkpoint': "path of a TapFinger checkpoint (.pt; default: the shipped one for the instance's "
                           'preset and variant, learned/checkpoints/)',
             'greedy': 'bool, default True: argmax actions (False: sample with the solver seed)',
             'samples': 'int 0..10000, default 0: after the first episode (as `greedy` says), play this many '
                        'sampled episodes of the same policy (seeds from (seed, k)) and keep the schedule '
                        'the referee scores lowest; stops at the time limit with the best complete one',
             'temperature': 'float in (0, 10], default 1: sampled acting (`samples`, or `greedy` false) '
                            'draws from the softmax of the logits / temperature; below 1 nearer the greedy '
                            'choice'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': True,
  'provenance': ['edgebench.learned.provenance:checkpoint_records', ['tapfinger-bc']],
  'bound': None},
 {'name': 'tapfinger-generic-bc',
  'module': 'edgebench.learned.tapfinger',
  'kind': 'learned',
  'families': ['placement'],
  'description': 'TapFinger network with type-generic inputs (task features from the performance model, an '
                 'allocation head over any cluster grid, v2 cell features), by imitation only of '
                 "placement-lns: each file plays every placement instance as trained (the instance's "
                 "preset's file first); no reinforcement learning [trained by alibaba single: bc; hetero-6 "
                 'single: bc; synthetic-3 single: bc; testbed single: bc]',
  'params': {'checkpoint': "path of a TapFinger checkpoint (.pt; default: the shipped one for the instance's "
                           'preset and variant, learned/checkpoints/)',
             'greedy': 'bool, default True: argmax actions (False: sample with the solver seed)',
             'samples': 'int 0..10000, default 0: after the first episode (as `greedy` says), play this many '
                        'sampled episodes of the same policy (seeds from (seed, k)) and keep the schedule '
                        'the referee scores lowest; stops at the time limit with the best complete one',
             'temperature': 'float in (0, 10], default 1: sampled acting (`samples`, or `greedy` false) '
                            'draws from the softmax of the logits / temperature; below 1 nearer the greedy '
                            'choice'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': True,
  'provenance': ['edgebench.learned.provenance:checkpoint_records', ['tapfinger-generic-bc']],
  'bound': None},
 {'name': 'tapfinger-nograph',
  'module': 'edgebench.learned.tapfinger',
  'kind': 'learned',
  'families': ['placement'],
  'description': 'TapFinger ablation (MAPPO-fine-tuned): MLP encoder over concatenated features instead of '
                 'the graph network [trained by hetero-6 multi: bc+mappo, 122880 env steps; synthetic-3 '
                 'multi: bc+mappo, 71680 env steps]',
  'params': {'checkpoint': "path of a TapFinger checkpoint (.pt; default: the shipped one for the instance's "
                           'preset and variant, learned/checkpoints/)',
             'greedy': 'bool, default True: argmax actions (False: sample with the solver seed)',
             'samples': 'int 0..10000, default 0: after the first episode (as `greedy` says), play this many '
                        'sampled episodes of the same policy (seeds from (seed, k)) and keep the schedule '
                        'the referee scores lowest; stops at the time limit with the best complete one',
             'temperature': 'float in (0, 10], default 1: sampled acting (`samples`, or `greedy` false) '
                            'draws from the softmax of the logits / temperature; below 1 nearer the greedy '
                            'choice'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': True,
  'provenance': ['edgebench.learned.provenance:checkpoint_records', ['tapfinger-nograph-mappo']],
  'bound': None},
 {'name': 'tapfinger-nograph-bc',
  'module': 'edgebench.learned.tapfinger',
  'kind': 'learned',
  'families': ['placement'],
  'description': 'TapFinger no-graph ablation by imitation only of placement-milp [trained by hetero-6 '
                 'multi: bc; hetero-6 single: bc+dagger; synthetic-3 multi: bc; synthetic-3 single: bc]',
  'params': {'checkpoint': "path of a TapFinger checkpoint (.pt; default: the shipped one for the instance's "
                           'preset and variant, learned/checkpoints/)',
             'greedy': 'bool, default True: argmax actions (False: sample with the solver seed)',
             'samples': 'int 0..10000, default 0: after the first episode (as `greedy` says), play this many '
                        'sampled episodes of the same policy (seeds from (seed, k)) and keep the schedule '
                        'the referee scores lowest; stops at the time limit with the best complete one',
             'temperature': 'float in (0, 10], default 1: sampled acting (`samples`, or `greedy` false) '
                            'draws from the softmax of the logits / temperature; below 1 nearer the greedy '
                            'choice'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': True,
  'provenance': ['edgebench.learned.provenance:checkpoint_records', ['tapfinger-nograph-bc']],
  'bound': None},
 {'name': 'tapfinger-nopointer',
  'module': 'edgebench.learned.tapfinger',
  'kind': 'learned',
  'families': ['placement'],
  'description': 'TapFinger ablation (MAPPO-fine-tuned): random pending-task selection (seeded) instead of '
                 'the pointer network [trained by hetero-6 multi: bc+mappo, 61440 env steps; hetero-6 '
                 'single: bc+mappo, 194560 env steps; synthetic-3 multi: bc+mappo, 28160 env steps; '
                 'synthetic-6 multi: bc+mappo, 30720 env steps; testbed single: bc+mappo, 16384 env steps]',
  'params': {'checkpoint': "path of a TapFinger checkpoint (.pt; default: the shipped one for the instance's "
                           'preset and variant, learned/checkpoints/)',
             'greedy': 'bool, default True: argmax actions (False: sample with the solver seed)',
             'samples': 'int 0..10000, default 0: after the first episode (as `greedy` says), play this many '
                        'sampled episodes of the same policy (seeds from (seed, k)) and keep the schedule '
                        'the referee scores lowest; stops at the time limit with the best complete one',
             'temperature': 'float in (0, 10], default 1: sampled acting (`samples`, or `greedy` false) '
                            'draws from the softmax of the logits / temperature; below 1 nearer the greedy '
                            'choice'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': True,
  'provenance': ['edgebench.learned.provenance:checkpoint_records', ['tapfinger-mappo']],
  'bound': None},
 {'name': 'tapfinger-nopointer-bc',
  'module': 'edgebench.learned.tapfinger',
  'kind': 'learned',
  'families': ['placement'],
  'description': "TapFinger no-pointer ablation (random task order) with the imitation-only full model's "
                 'allocation head [trained by hetero-6 multi: bc; hetero-6 single: bc+dagger; sjf-ablation '
                 'single: bc; synthetic-3 multi: bc; synthetic-3 single: bc; testbed multi: bc; testbed '
                 'single: bc]',
  'params': {'checkpoint': "path of a TapFinger checkpoint (.pt; default: the shipped one for the instance's "
                           'preset and variant, learned/checkpoints/)',
             'greedy': 'bool, default True: argmax actions (False: sample with the solver seed)',
             'samples': 'int 0..10000, default 0: after the first episode (as `greedy` says), play this many '
                        'sampled episodes of the same policy (seeds from (seed, k)) and keep the schedule '
                        'the referee scores lowest; stops at the time limit with the best complete one',
             'temperature': 'float in (0, 10], default 1: sampled acting (`samples`, or `greedy` false) '
                            'draws from the softmax of the logits / temperature; below 1 nearer the greedy '
                            'choice'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': True,
  'provenance': ['edgebench.learned.provenance:checkpoint_records', ['tapfinger-bc']],
  'bound': None},
 {'name': 'tapfinger-plan-bc',
  'module': 'edgebench.learned.tapfinger',
  'kind': 'learned',
  'families': ['placement'],
  'description': "TapFinger variant (not the paper's agents): the generic network whose agents also see the "
                 "step's shared list plan of the pending windows (placement-list-window: planned here, "
                 'planned here now, planned wait per pending task), by imitation only of '
                 'placement-list-window; no reinforcement learning [trained by hetero-6 single: bc]',
  'params': {'checkpoint': "path of a TapFinger checkpoint (.pt; default: the shipped one for the instance's "
                           'preset and variant, learned/checkpoints/)',
             'greedy': 'bool, default True: argmax actions (False: sample with the solver seed)',
             'samples': 'int 0..10000, default 0: after the first episode (as `greedy` says), play this many '
                        'sampled episodes of the same policy (seeds from (seed, k)) and keep the schedule '
                        'the referee scores lowest; stops at the time limit with the best complete one',
             'temperature': 'float in (0, 10], default 1: sampled acting (`samples`, or `greedy` false) '
                            'draws from the softmax of the logits / temperature; below 1 nearer the greedy '
                            'choice'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': True,
  'provenance': ['edgebench.learned.provenance:checkpoint_records', ['tapfinger-plan-bc']],
  'bound': None},
 {'name': 'tiresias',
  'module': 'edgebench.solvers.placement_baselines',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': 'TapFinger baseline Tiresias: preemptive 2-level least-attained GPU service, pauses tasks',
  'params': {'elastic': "bool, default True (the authors' call, which made their saved figures): after the "
                        'minimum GPUs, hand out the remaining GPUs one at a time by least attained service; '
                        "False: minimum GPUs only (the paper's wording, the suite's earlier default)",
             'admission': "'fit' (default: a pending task is admitted whenever the LAS plan gives it "
                          'resources, pausing lower-priority tasks, and several per cluster in the same pass '
                          "in variant multi) or 'authors' (the authors' tiresias() in their step loop: a "
                          'cluster admits only while it holds fewer than min(capacity // minimum) placed '
                          'tasks, paused ones included, one task per cluster and pass, the first pending one '
                          'no earlier cluster of the pass took; docs/calibration.md)'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': False,
  'provenance': None,
  'bound': None},
 {'name': 'tiresias-np',
  'module': 'edgebench.solvers.placement_baselines',
  'kind': 'heuristic',
  'families': ['placement'],
  'description': 'Tiresias without preemption: FIFO start at the minimum GPUs and an even CPU share, fixed',
  'params': {'rule': "'suite' (default: FIFO at the minimum GPUs and the even CPU share of a full cluster) "
                     "or 'authors' (the authors' non_preemptable_tiresias: the first pending task gets "
                     'ceil(capacity / (pending + placed)) of each resource in their step loop: clusters in '
                     'reverse index order, one start per cluster and call; docs/calibration.md)'},
  'types': {},
  'choices': {},
  'bounds': {},
  'default_time_limit': None,
  'proves': False,
  'open_params': False,
  'check': True,
  'applies': False,
  'provenance': None,
  'bound': None}]
