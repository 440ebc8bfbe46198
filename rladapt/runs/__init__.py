"""The run store: one directory per launched run, with its typed record (``RunRecord``).

``rladapt.runs.record`` is the record (its parts, its formats, its reader), ``rladapt.runs.store`` the store
that writes it (``RunStore``, ``Run``). The runner and the CLI read records through attributes only.
"""

from .index import INDEX_FILE, RunIndex, fingerprint
from .record import (
    CREATED,
    RECORD_FILE,
    RECORD_FORMAT,
    SUBMITTING,
    Attempt,
    BadStep,
    CheckpointFacts,
    DamagedRecord,
    RecordedArtifacts,
    RunRecord,
    ServiceRecord,
    Submitter,
    read_record,
)
from .store import (
    ARTIFACTS_DIR,
    HOME_ENV,
    SUBMIT_LOCK,
    DamagedRun,
    Run,
    RunStore,
    new_run_id,
    run_path,
    spec_hash,
    state_home,
    write_atomic,
)

__all__ = [
    "ARTIFACTS_DIR",
    "CREATED",
    "HOME_ENV",
    "INDEX_FILE",
    "RECORD_FILE",
    "RECORD_FORMAT",
    "SUBMITTING",
    "SUBMIT_LOCK",
    "Attempt",
    "BadStep",
    "CheckpointFacts",
    "DamagedRecord",
    "DamagedRun",
    "RecordedArtifacts",
    "Run",
    "RunIndex",
    "RunRecord",
    "RunStore",
    "ServiceRecord",
    "Submitter",
    "fingerprint",
    "new_run_id",
    "read_record",
    "run_path",
    "spec_hash",
    "state_home",
    "write_atomic",
]
