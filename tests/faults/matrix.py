"""The fault and bad-input matrix: each row is a fault, what xwatch must do, and the
test that shows it. ``docs/reliability.md`` is rendered from these rows
(``python -m tests.faults.matrix > docs/reliability.md``); ``test_matrix.py`` fails
when the page and the rows differ or when a row names a test that does not exist.

Rules for every row: an impossible request is refused before anything starts
(titled error, exit 2); a fault during a run never loses what was measured; a
requested artefact that was not written means a non-zero exit; nothing is left
running.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    area: str
    fault: str
    must: str
    test: str  # path::function


R = "tests/faults/test_refused.py::"
T = "tests/faults/test_runtime.py::"
B = "tests/integration/test_box_sessions.py::"
ROWS: tuple[Row, ...] = (
    # --- refused before anything starts
    Row("export", "`--export` folder cannot be made (`/proc/xw/out`)",
        "exit 2 \"Export folder unusable\", nothing started", R + "test_export_folder_that_cannot_be_made"),
    Row("export", "`--export` names a file", "exit 2, says it is a file",
        R + "test_export_path_that_is_a_file"),
    Row("export", "`--export` folder not writable (non-root)", "exit 2",
        R + "test_export_folder_without_write_permission"),
    Row("devices", "`--gpus 0,1` on a machine without GPUs", "exit 2 \"No such GPU\"; no CPU copies "
        "labelled as GPUs", R + "test_gpus_on_a_machine_without_them"),
    Row("devices", "`--gpus 0,3` on a two-GPU machine", "exit 2 naming GPU 3 and the count",
        R + "test_gpus_beyond_what_the_machine_has"),
    Row("devices", "`--device cuda:7` where there is no such GPU", "exit 2 before torch loads",
        R + "test_a_cuda_device_that_does_not_exist"),
    Row("metrics", "`--metrics-port` in use", "exit 2, nothing started",
        R + "test_metrics_port_in_use"),
    Row("telemetry", "`--telemetry nvml` (or amdsmi) that cannot start", "exit 2 naming the cause: "
        "module missing, library missing or no device; never a silent fallback",
        R + "test_explicit_telemetry_backend_that_cannot_start"),
    Row("XSched", "install of the wrong platform (CUDA shim, HIP workloads)",
        "exit 2 naming the missing shim and the one found", R + "test_xsched_install_of_the_wrong_platform"),
    Row("MPS", "`--mode mps` without `nvidia-cuda-mps-control`, or without an NVIDIA GPU",
        "exit 2 saying what to do", R + "test_mps_where_it_cannot_run"),
    Row("XSched", "another session's xserver already holds the machine's XSched channel",
        "exit 2 naming its pid, user, port and command line, and how to join; the first "
        "session runs on untouched (a second xserver would take the channel over)",
        B + "test_second_xsched_session_is_refused_and_the_first_runs_on"),
    Row("XSched", "`--join-xserver` to an xserver running another policy",
        "exit 2 naming both policies; `=set-policy` changes it, said before anything starts "
        "and in the report", B + "test_joining_another_policy_is_refused_unless_asked_to_set_it"),
    Row("MPS", "another session's MPS control daemon serves the GPU asked for",
        "exit 2 naming its pid, user and pipe folder; `--join-mps` uses it and never stops it; "
        "the first session runs on untouched",
        B + "test_second_mps_session_is_refused_then_joins_and_the_first_runs_on"),
    Row("scenario", "unknown or invalid key", "exit 2 naming file, key and allowed values",
        R + "test_bad_scenario_key_names_file_key_and_allowed_values"),
    Row("snapshots", "corrupt, truncated or future-version snapshot for `replay`/`report`",
        "exit 2 with a titled error, no traceback", R + "test_corrupt_truncated_or_future_snapshots"),
    Row("snapshots", "a real snapshot cut in half", "exit 2, no traceback",
        R + "test_truncated_real_snapshot"),
    # --- during a run
    Row("disk", "disk full (ENOSPC) at export", "snapshot saved to the sessions folder instead, the "
        "message says where, exit 1", T + "test_disk_full_at_export_saves_the_snapshot_elsewhere_and_exits_non_zero"),
    Row("disk", "disk full at export on a real 64 KiB tmpfs (where mounting is allowed)",
        "exit 1, \"snapshot saved instead to\"", T + "test_disk_full_on_a_real_tmpfs_is_a_non_zero_exit"),
    Row("disk", "disk full while spooling raw events", "raw rows dropped and counted, one warning, "
        "statistics exact, the run goes on", T + "test_disk_full_while_spooling_keeps_the_statistics_exact"),
    Row("observer", "xwatch itself SIGSTOPped for 10 s, then continued",
        "no workload called stalled; the pause is logged; every request counted",
        T + "test_xwatch_stopped_for_10_s_does_not_blame_the_workloads"),
    Row("observer", "xwatch SIGKILLed", "no workload left (own process groups, PDEATHSIG, the "
        "worker's parent watch)", "tests/integration/test_signals.py::test_sigkill_of_xwatch_still_leaves_no_workload"),
    Row("observer", "xwatch SIGKILLed with forked workers running", "no fork server and no "
        "forked worker left (PDEATHSIG: xwatch -> server -> workers)",
        "tests/integration/test_forkserver.py::test_sigkill_of_xwatch_leaves_no_forked_worker_nor_server"),
    Row("observer", "the fork server SIGKILLed while its forked workers measure",
        "they die with it; their phase fails naming the server; the next phase's workers "
        "start by exec; nothing left",
        T + "test_a_killed_fork_server_fails_its_phase_and_the_next_starts_by_exec"),
    Row("observer", "xwatch SIGKILLed while a workload's daemonized child runs",
        "the next xwatch kills the dead one's strays", T + "test_stray_of_a_killed_xwatch_is_swept_by_the_next_one"),
    Row("observer", "terminal closed (SIGHUP) under the dashboard", "session kept, nothing left",
        "tests/integration/test_sessions.py::test_closing_the_terminal_keeps_the_session"),
    Row("observer", "dashboard SIGKILLed", "events stay on disk; `xwatch sessions` shows it "
        "interrupted; `--recover` rebuilds the statistics",
        "tests/integration/test_sessions.py::test_sigkill_leaves_an_interrupted_session_that_can_be_recovered"),
    Row("observer", "SIGTERM to a headless run", "exit 143, every workload stopped",
        "tests/integration/test_signals.py::test_sigterm_stops_every_workload"),
    Row("workload", "a workload that daemonizes (its child leaves the process group)",
        "the child is killed at the phase end; the exit is seen although the child holds the "
        "pipes", T + "test_a_workload_that_daemonizes_leaves_nothing_behind"),
    Row("workload", "closes its event pipe at once", "\"measured nothing ... closed its event "
        "pipe\", exit 1, the others' data kept", T + "test_a_workload_that_closes_its_event_pipe_at_once"),
    Row("workload", "never writes a line", "stalled, phase failed, exit 1",
        "tests/integration/test_stalls.py::test_silent_command_is_stalled_and_fails_the_run"),
    Row("workload", "garbage, non-UTF-8 and an over-long line, then a flood of 200k events",
        "bad lines counted, every event read", T + "test_a_flooding_workload_is_read_and_counted"),
    Row("workload", "non-UTF-8, a 3 MiB line and a flood on a regex workload's stdout",
        "bad bytes replaced, the long line skipped, every matching line counted",
        T + "test_garbage_and_a_flood_on_a_regex_workloads_stdout"),
    Row("workload", "malformed lines on the event pipe", "counted, never fatal",
        "tests/unit/test_protocol.py::test_malformed_lines_are_counted_not_fatal"),
    Row("workload", "an over-long line", "dropped, the parser recovers",
        "tests/unit/test_protocol.py::test_overlong_line_is_dropped_and_parser_recovers"),
    Row("workload", "a legitimate pause (checkpoint, reload)", "`stall_s = false` never fails it; "
        "`stall_s = N` fails it after N s", "tests/integration/test_stalls.py::test_stall_s_per_workload"),
    Row("daemons", "xserver killed mid-phase", "phase failed at once with its exit, workloads "
        "stopped, exit 1", "tests/integration/test_stalls.py::test_killed_xserver_fails_the_phase_at_once"),
    Row("daemons", "xserver hung (SIGSTOP): its HTTP API stops answering", "phase failed after "
        "5 polls over 2 s, the xserver killed, exit 1", T + "test_a_hung_xserver_fails_the_phase"),
    Row("daemons", "MPS control daemon killed mid-phase", "phase failed naming the signal, exit 1, "
        "nothing left", "tests/integration/test_modes_fake.py::test_a_killed_mps_daemon_fails_the_phase_and_leaves_nothing"),
    Row("daemons", "MPS server killed mid-phase", "phase failed naming the server's pid and the clients it took down (not only cudaErrorMpsRpcFailure), exit 1, nothing left", "tests/integration/test_modes_fake.py::test_a_killed_mps_server_is_named_as_the_cause"),
    Row("daemons", "MPS control daemon hung (SIGSTOP)", "\"has not answered\" fails the phase, "
        "the daemon is killed", T + "test_a_hung_mps_daemon_fails_the_phase_and_is_removed"),
    Row("server", "a server that never answers its `ready` route", "\"was never ready\" within "
        "`ready_timeout_s`, naming the last answer and its last stderr lines; its whole tree stopped",
        "tests/faults/test_serving.py::test_a_server_that_is_never_ready_is_named"),
    Row("server", "a server that dies mid-phase", "\"exited with status N mid-phase\" with its last "
        "stderr lines; the requests measured before are kept; the phase fails, exit 1, nothing left",
        "tests/faults/test_serving.py::test_a_server_dying_under_xwatch_fails_the_phase_naming_it"),
    Row("server", "a server that dies mid-phase (the generator alone)", "exit 3 naming it, measured "
        "requests sent first", "tests/faults/test_serving.py::test_a_server_that_dies_mid_phase_is_named_and_its_requests_kept"),
    Row("server", "4xx/5xx answers (HTTP 500; 422 for an unknown field like `ignore_eos`)",
        "counted as errors; at the warm-up or `fail_streak` in a row: named with the status and body",
        "tests/faults/test_serving.py::test_http_errors_are_counted_then_named"),
    Row("server", "a stream cut short (the connection breaks mid-answer)", "each an error \"stream "
        "cut short after N text chunks\"; a run of them fails the workload",
        "tests/faults/test_serving.py::test_streams_cut_short_are_errors_and_a_run_of_them_fails_the_workload"),
    Row("server", "the server's port already taken", "named (and who holds it) before the server "
        "starts", "tests/faults/test_serving.py::test_a_port_already_taken_is_named_before_the_server_starts"),
    Row("server", "a fixed port already taken when xwatch starts", "refused before anything "
        "starts: \"Server port taken\", the port and who holds it, exit 2",
        "tests/faults/test_refused.py::test_a_servers_taken_fixed_port_is_named_before_anything_starts"),
    Row("server", "`port = \"auto\"`: the port taken between its choice and the start, or "
        "another xwatch workload's server answering there", "named (who holds it), exit 5: "
        "\"two processes chose it at once (rare); run it again\"",
        "tests/unit/test_serve_placement.py::test_a_port_taken_between_its_choice_and_the_start_is_named"),
    Row("server", "the phase ends before the server is ready", "\"chat: not ready after N s "
        "(GET /health: HTTP 503 ...)\" instead of \"measured nothing\"; its tree stopped",
        "tests/integration/test_serving.py::test_a_stop_while_the_server_loads_is_clean_and_says_how_far_it_got"),
    Row("server", "an API that is not OpenAI's (HTML, no event stream, 404)", "\"does not speak "
        "OpenAI's streaming API\" with what it answered", "tests/faults/test_serving.py::test_an_api_that_is_not_openais_is_named"),
    Row("modes", "XSched's shim forced into a native phase (workload's own LD_PRELOAD)",
        "phase failed naming the library and where it came from",
        "tests/integration/test_modes_fake.py::test_a_shim_forced_into_a_native_phase_fails_it_naming_the_library"),
    Row("modes", "XSched's lib on the user's LD_LIBRARY_PATH, XSCHED_* set", "native phase clean "
        "by construction; the snapshot says what was removed",
        "tests/integration/test_modes_fake.py::test_native_phase_drops_the_users_xsched_and_mps_environment"),
    Row("modes", "a workload outside MPS in an MPS phase", "verdict not-in-mps and an alert",
        "tests/integration/test_modes_fake.py::test_a_workload_outside_mps_gets_its_verdict_and_an_alert"),
)

#: rows run on a GPU machine, recorded in docs/results (not in CI)
GPU_ROWS: tuple[tuple[str, str, str], ...] = (
    ("XSched's lib on LD_LIBRARY_PATH with XSCHED_SCHEDULER=GLB (H100)",
     "native phase clean; xwatch restarts itself without the shim", "docs/results/h100-2026-11-23c.md"),
    ("shim forced into a native phase (H100, real libshimcuda.so)", "phase failed, cause names it",
     "docs/results/h100-2026-11-23c.md"),
    ("MPS control daemon SIGKILLed mid-phase (H100)", "phase failed, exit 1",
     "docs/results/h100-2026-11-23c.md"),
    ("xwatch SIGKILLed in an MPS phase (H100)", "no daemon, server or worker left",
     "docs/results/h100-2026-11-23c.md"),
    ("LOW out of GPU memory (ResNet-50 at batch 32768, H100)", "LOW failed with its "
     "OutOfMemoryError as the cause, HIGH ran all 300 requests, phase failed naming LOW, exit 1",
     "docs/results/h100-2026-11-23c.md"),
)


def render() -> str:
    lines = ["# Reliability: faults and bad input", "",
             "Generated from `tests/faults/matrix.py` (`python -m tests.faults.matrix > "
             "docs/reliability.md`); a test fails when this page and the rows differ.", "",
             "Rules for every row: an impossible request is refused before anything starts "
             "(titled error, exit 2); a fault during a run never loses what was measured (the "
             "snapshot goes somewhere safe and the message says where); a requested artefact "
             "that was not written means a non-zero exit; nothing is left running.", "",
             "| area | fault | what xwatch does | test |", "|---|---|---|---|"]
    for r in ROWS:
        lines.append(f"| {r.area} | {r.fault} | {r.must} | `{r.test}` |")
    lines += ["", "## On a GPU machine (recorded, not in CI)", "",
              "| fault | what xwatch did | record |", "|---|---|---|"]
    for fault, did, where in GPU_ROWS:
        lines.append(f"| {fault} | {did} | [{where}]({where.removeprefix('docs/')}) |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
