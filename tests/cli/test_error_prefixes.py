"""One rule for every command's problem lines: ``kraftwire <command>[ <action>]: <what>``, where
<what> names a file at most once. Before, codegen printed ``passwd: not valid spec JSON`` (no prefix)
and ``broken.jar: broken.jar: ...`` (the file twice), decode and report ``kraftwire: ...``, and a
stopped node ``kraftwire node: ...``."""

from __future__ import annotations

import pytest

from kraftwire.cli import main


@pytest.fixture
def files(tmp_path):
    passwd = tmp_path / "passwd"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\n")
    jar = tmp_path / "kafka-clients-4.5.0.jar"
    jar.write_bytes(b"PK\x03\x04 not really a zip")
    return {"passwd": str(passwd), "jar": str(jar), "out": str(tmp_path / "out"), "tmp": tmp_path}


CASES = [
    (["codegen", "--schemas", "{passwd}", "--out", "{out}"], "kraftwire codegen", "{passwd}"),
    (["codegen", "--schemas", "{jar}", "--out", "{out}"], "kraftwire codegen", "{jar}"),
    (["decode", "{passwd}"], "kraftwire decode", "{passwd}"),
    (["report", "{passwd}", "--out", "{out}.html"], "kraftwire report", "{passwd}"),
    (["dump-log", "{passwd}"], "kraftwire dump-log", "{passwd}"),
    (["dump-log", "{out}"], "kraftwire dump-log", "{out}"),
    (["node", "start", "--config", "{passwd}"], "kraftwire node start", "{passwd}"),
    (["decode-hex", "VoteRequest", "0", "zz"], "kraftwire decode-hex", None),
    (["quorum", "describe", "--status"], "kraftwire quorum describe", None),
    (["consume", "--bootstrap-controller", "nowhere"], "kraftwire consume", None),
    (["cluster", "up", "--controllers", "0"], "kraftwire cluster up", None),
]


@pytest.mark.parametrize("argv,prefix,named", CASES, ids=[" ".join(c[0][:2]) for c in CASES])
def test_every_problem_line_starts_with_the_command(argv, prefix, named, files, capsys):
    argv = [a.format(**files) for a in argv]
    status = main(argv)
    err = capsys.readouterr().err
    assert status in (1, 2) and err, err
    for line in err.splitlines():
        assert line.startswith(f"{prefix}: "), line
        if named is not None:
            name = named.format(**files)
            assert line.count(name.rsplit("/", 1)[-1]) <= 1, line  # the file named once
    assert "Traceback" not in err
