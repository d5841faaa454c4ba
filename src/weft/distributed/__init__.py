"""Scale-out: the calls of a run on Ray workers, the run itself on its store.

``graph.run(..., executor=RayExecutor())`` calls the graph's nodes (those that take no
``ctx``) as Ray tasks; ``with offload_to(RayExecutor()):`` does the same for the tool
calls of plans and agents run inside it. Scheduling, merging and recording stay with the
WorkGraph engine on the driver, so a run on Ray ends in the state, records and event order
it would have in-process. Ray is imported on first use.
"""

from weft.distributed.executor import RayExecutor, run_on_ray
from weft.graph.offload import offload_to

__all__ = ["RayExecutor", "offload_to", "run_on_ray"]
