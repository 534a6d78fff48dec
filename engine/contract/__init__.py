"""What both halves share: the trajectory contract, JSON I/O with one-line errors, atomic writes.

Nothing here imports the scoring stages, so the rollout side depends on this package alone.
"""

from engine.contract.atomic import (
    atomic_write_bytes,
    atomic_write_csv,
    atomic_write_json,
    atomic_write_text,
    csv_text,
    default_file_mode,
)
from engine.contract.errors import (
    ConfigError,
    InputError,
    Interrupted,
    WriteFailed,
    check_choice,
    check_name,
    config_int,
    is_number,
    shown,
)
from engine.contract.failures import (
    AGENT,
    CUT_SHORT,
    ERROR_KINDS,
    MODEL_API,
    REPLAY,
    SERVER,
    is_lost,
    lost_tasks,
    record_error,
    scorable,
    server_down,
    task_error,
    without_lost,
)
from engine.contract.jsonio import (
    MAX_DEPTH,
    JsonMapping,
    JsonObject,
    JsonValue,
    append_line,
    canonical_json,
    checked_canonical_json,
    digest,
    dumps_json,
    file_digest,
    json_strings,
    lenient_canonical_json,
    read_json,
    read_keyed_lines,
    strict_value,
)
from engine.contract.paths import contained_path
from engine.contract.tasks import Task, read_tasks, task_id_of, task_records
from engine.contract.trajectory import (
    MADE,
    NOT_MADE_RESULT,
    SAFE_NAME_CHARS,
    Call,
    Step,
    Trajectory,
    TrajectoryFile,
    call_made,
    not_made_calls,
    safe_name,
    set_steps,
    trajectory_record,
)
from engine.contract.trajectory_io import (
    dumps_trajectories,
    file_objects,
    parse_call,
    parse_trajectories,
    read_trajectories,
    write_trajectories,
)

__all__ = [
    "AGENT", "CUT_SHORT", "ERROR_KINDS", "MODEL_API", "REPLAY", "SERVER", "is_lost", "lost_tasks", "record_error",
    "scorable", "server_down", "task_error", "without_lost",
    "Call", "ConfigError", "InputError", "Interrupted", "JsonMapping", "JsonObject", "JsonValue", "MADE", "MAX_DEPTH",
    "NOT_MADE_RESULT", "SAFE_NAME_CHARS",
    "Step", "Task",
    "Trajectory", "TrajectoryFile", "WriteFailed",
    "append_line", "atomic_write_bytes", "atomic_write_csv", "atomic_write_json", "atomic_write_text",
    "call_made", "canonical_json", "check_choice", "check_name", "checked_canonical_json", "config_int",
    "contained_path", "csv_text", "default_file_mode",
    "digest", "dumps_json", "dumps_trajectories", "file_digest", "file_objects", "is_number", "json_strings",
    "lenient_canonical_json",
    "not_made_calls", "parse_call",
    "parse_trajectories", "read_json", "read_keyed_lines", "read_tasks", "read_trajectories", "safe_name", "set_steps",
    "shown",
    "strict_value", "task_id_of", "task_records", "trajectory_record", "write_trajectories",
]
