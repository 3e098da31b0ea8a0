"""The pure parts of running work on a cluster: Ray's job JSON read leniently, job ids that
may reach a URL path, log clipping and failure reasons, and where a cluster's head is."""

from __future__ import annotations

import pytest

from jupyter_dw.domain.ray_endpoints import NoAddress, client_address, dashboard_address
from jupyter_dw.domain.ray_jobs import (
    RayJob,
    clip_log,
    failure_reason,
    job_id_error,
    job_list,
    last_lines,
    plain_log,
)
from jupyter_dw.domain.url_templates import validate_url_template


@pytest.mark.parametrize("good", ["raysubmit_AbC123xyz", "my-job.1", "a"])
def test_ray_submission_ids_are_accepted(good):
    assert job_id_error(good) is None


@pytest.mark.parametrize("bad", ["", ".", "..", "../x", "a/b", "-x", "a b", "x" * 129, None, 7])
def test_ids_that_could_escape_a_url_path_are_refused(bad):
    assert "letters, digits" in job_id_error(bad)


def test_ray_job_json_is_read_leniently_and_newest_first():
    answer = [
        {"submission_id": "old", "entrypoint": "python a.py", "status": "SUCCEEDED",
         "start_time": 1000, "end_time": 4000, "metadata": {"k": 1}},
        {"submission_id": "new", "entrypoint": "python b.py", "status": "WEIRD",
         "start_time": 5000, "driver_exit_code": "x"},
        {"job_id": "driver-only", "status": "RUNNING"},  # a Ray Client session: no submission
        "not a job",
    ]  # fmt: skip
    jobs = job_list("demo", answer)
    assert [j.submission_id for j in jobs] == ["new", "old"]
    assert jobs["new"].status == "PENDING" and jobs["new"].driver_exit_code is None
    assert jobs["old"].metadata == {"k": "1"} and jobs["old"].terminal
    assert jobs["old"].duration_ms(now_ms=10_000) == 3000
    assert jobs["new"].duration_ms(now_ms=10_000) == 5000  # still running: until now
    assert job_list("demo", {"not": "a list"}).jobs == ()


def test_a_long_log_keeps_its_end_from_a_line_start():
    text = "".join(f"line {i}\n" for i in range(1000))
    clipped, cut = clip_log(text, limit=100)
    assert cut and clipped.startswith("line ") and clipped.endswith("line 999\n")
    assert len(clipped) <= 100
    assert clip_log("short", limit=100) == ("short", False)


def test_terminal_colours_and_links_are_taken_out_of_a_log():
    # The line Ray's worker logs when a driver connects, as the job's log has it.
    line = (
        "Connected. View the dashboard at \x1b[1m\x1b[32mhttp://127.0.0.1:8265 \x1b[39m\x1b[22m\n"
    )
    assert plain_log(line) == "Connected. View the dashboard at http://127.0.0.1:8265 \n"
    link = "see \x1b]8;;http://x\x1b\\here\x1b]8;;\x07 now \x1b[2K\x1b[1;31mred\x1b[0m"
    assert plain_log(link) == "see here now red"
    assert plain_log("no [32m escape, a bracket [1] stays") == "no [32m escape, a bracket [1] stays"
    # Ray quotes a failed job's last lines in its message, escapes included.
    job = RayJob.from_ray({"status": "FAILED", "message": "exit code 3: \x1b[31mboom\x1b[0m"})
    assert job.message == "exit code 3: boom"


def test_a_failure_says_ray_s_words_then_the_last_log_lines_once():
    job = RayJob(
        "j", "python x.py", "FAILED", message="Job entrypoint command failed with exit code 1"
    )
    logs = "start\n\nTraceback ...\nValueError: boom\n"
    reason = failure_reason(job, logs)
    assert reason.startswith("Job entrypoint command failed")
    assert reason.endswith("ValueError: boom") and "Last log lines" in reason
    quoted = RayJob("j", "x", "FAILED", message="failed: ValueError: boom")
    assert "Last log lines" not in failure_reason(quoted, logs)  # Ray already quoted it
    assert last_lines("a\n\nb\nc\n", count=2) == ["b", "c"]


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("http://{host}/x/{name}", "unknown placeholder"),
        ("http://ray/{name!r}", "no format spec"),
        ("http://ray/fixed", "must contain {name}"),
        ("ftp://{name}.svc", "http:// or https:// URL"),
        ("http://{name}.svc/?a=1", "query string"),
        ("http://{name", "not a valid template"),
    ],
)
def test_bad_url_templates_say_what_is_wrong(template, problem):
    with pytest.raises(ValueError, match=problem):
        validate_url_template(template)


def test_the_head_is_found_from_a_template_or_what_kuberay_reports():
    raycluster = {
        "metadata": {"name": "demo", "namespace": "ns"},
        "status": {"head": {"serviceName": "demo-head-svc"}, "endpoints": {"client": "10001"}},
    }
    assert validate_url_template("https://gw/{namespace}/{name}") == "https://gw/{namespace}/{name}"
    assert dashboard_address("https://gw/{namespace}/{name}/", 8265, "demo", "ns", {}) == (
        "https://gw/ns/demo"
    )
    assert dashboard_address("", 8265, "demo", "ns", raycluster) == (
        "http://demo-head-svc.ns.svc:8265"  # no dashboard endpoint reported: KubeRay's default
    )
    assert client_address("", 10001, "demo", "ns", raycluster) == "ray://demo-head-svc.ns.svc:10001"
    forged = {"status": {"head": {"serviceName": "evil.example.com"}}}
    with pytest.raises(NoAddress, match="head Service"):
        dashboard_address("", 8265, "demo", "ns", forged)
    bad_port = {**raycluster, "status": {**raycluster["status"], "endpoints": {"dashboard": "x"}}}
    with pytest.raises(NoAddress, match="dashboard port"):
        dashboard_address("", 8265, "demo", "ns", bad_port)


def test_a_job_s_command_reads_as_the_user_wrote_it():
    import shlex

    program = 'import ray\nray.init()  # the job\'s driver joins\nprint("done")\n'
    job = RayJob.from_ray(
        {
            "submission_id": "s",
            "entrypoint": f"python -c {shlex.quote(program)}",
            "status": "RUNNING",
        }
    )
    assert "'\"'\"'" in job.entrypoint  # what the shell needs, what Ray has
    assert job.command == f"python -c {program}"
    assert job.to_json()["command"] == job.command
    # Not a shell command's words (unbalanced quote): shown as Ray has it.
    odd = RayJob.from_ray({"submission_id": "t", "entrypoint": "echo 'oops", "status": "PENDING"})
    assert odd.command == "echo 'oops"
