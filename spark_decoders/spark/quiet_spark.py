"""A Spark session for the command line that keeps Spark's own chatter off the user's terminal.

Started as Spark starts by default, ``kraftwire decode --spark`` filled stderr with the JVM's notes
(incubator modules, log4j's profile, the loopback-hostname and native-hadoop warnings, "Setting default
log level") and progress bars. Here the JVM gets a log4j2 configuration of our own (errors only), the
progress bar is off, and the JVM's standard error (log4j's console, the JVM's own warnings, the Python
workers it starts) goes to a log file in a temporary folder: removed when the work succeeds (or is
interrupted), kept and named on stderr when it fails, so nothing that explains a failure is lost.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Errors only, on the JVM's standard error (which points at the log file, see _stderr_to).
LOG4J2_PROPERTIES = """\
status = error
rootLogger.level = error
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


# The JVM of a local master (driver and executor in one) lives for one command: seconds of work,
# much of it run once (class loading, planning). HotSpot's C2 compiler spends CPU seconds on code
# that would not run long enough to repay it, and the parallel collector's threads compete with
# the tasks for the few cores; C1 alone and the serial collector cut the CPU of a
# ``kraftwire decode --spark`` by about a third (bench/decode.py --command). JIT and collector
# choices change no result.
LOCAL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


class SparkStartError(RuntimeError):
    """The session did not start (a master Spark refuses or cannot reach): why, and where the
    JVM's log is."""


def is_local_master(master: str) -> bool:
    """Whether ``master`` runs the executor inside the driver's JVM (local, local[N], local[*],
    local[N,F]); local-cluster and cluster masters start executor JVMs of their own."""
    return master == "local" or master.startswith("local[")


def driver_java_options(master: str, java_options: str) -> str:
    """``java_options`` for the driver's JVM, with ``LOCAL_JVM_OPTIONS`` on a local master."""
    return f"{java_options} {LOCAL_JVM_OPTIONS}" if is_local_master(master) else java_options


@contextlib.contextmanager
def quiet_session(master: str, app_name: str, command: str) -> Iterator["SparkSession"]:
    """A session on ``master`` whose JVM writes to a log file instead of the terminal; stopped at
    the end. ``command`` prefixes the one line that names the log when the work fails."""
    from pyspark.sql import SparkSession

    folder = tempfile.mkdtemp(prefix="kraftwire-spark-")
    log4j = os.path.join(folder, "log4j2.properties")
    with open(log4j, "w", encoding="utf-8") as handle:
        handle.write(LOG4J2_PROPERTIES)
    java_options = f"-Dlog4j2.configurationFile=file:{log4j}"
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", driver_java_options(master, java_options))
        .config("spark.executor.extraJavaOptions", java_options)
    )
    jvm_log = os.path.join(folder, "spark.log")
    with _stderr_to(jvm_log):  # the JVM started here keeps the log file as its standard error
        try:
            spark = builder.getOrCreate()
        except Exception as exc:  # pyspark's and py4j's errors share no base of their own
            reason = _first_exception(jvm_log) or str(exc).splitlines()[0]
            raise SparkStartError(
                f"Spark did not start on master {master!r}: {reason} (its log: {jvm_log})"
            ) from None
    spark.sparkContext.setLogLevel("ERROR")
    failed = False
    try:
        yield spark
    except Exception:  # not Ctrl-C: an interrupted run has nothing to explain
        failed = True
        raise
    finally:
        spark.stop()
        if failed:
            print(f"{command}: Spark's own log is in {jvm_log}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)


def _first_exception(jvm_log: str) -> str | None:
    """The message of the first exception the JVM wrote to its log, if any (the JVM explains a
    refused master there, pyspark only says that the JVM exited)."""
    with open(jvm_log, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.startswith("Exception in thread") and ": " in line:
                return line.split(": ", 1)[1].strip()
    return None


@contextlib.contextmanager
def _stderr_to(path: str) -> Iterator[None]:
    """Point file descriptor 2 at ``path`` while the block runs, then back: a process started in the
    block (the JVM) inherits the file, this process gets its terminal back."""
    sys.stderr.flush()
    saved = os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(target, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)
