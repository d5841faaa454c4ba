"""The executors of seed 001 (Step, Task, ParallelTask, Team, the WorkGraph bridge, the
multi-mode agent) on AgentMemory, and the team's board and bus on the store."""

from weft.plan.board import BoardEvent, BoardTask, MessageBus, TaskBoard, TeamMessage
from weft.plan.bridge import AgentStepExecutor
from weft.plan.jobs import DagReport
from weft.plan.multi import ModeResult, MultiModeAgent
from weft.plan.parallel import ParallelTaskExecutor, PlanReport
from weft.plan.step import StepExecutor, StepResult
from weft.plan.task import TaskExecutor, TaskResult
from weft.plan.team import TeamExecutor, TeamMember, TeamReport
from weft.plan.types import Step, Task, TaskPlan

__all__ = [
    "AgentStepExecutor",
    "BoardEvent",
    "BoardTask",
    "DagReport",
    "MessageBus",
    "ModeResult",
    "MultiModeAgent",
    "ParallelTaskExecutor",
    "PlanReport",
    "Step",
    "StepExecutor",
    "StepResult",
    "Task",
    "TaskBoard",
    "TaskExecutor",
    "TaskPlan",
    "TaskResult",
    "TeamExecutor",
    "TeamMember",
    "TeamMessage",
    "TeamReport",
]
