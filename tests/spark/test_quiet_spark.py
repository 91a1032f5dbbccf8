"""The quiet Spark session's JVM options: C1 alone and the serial collector for local masters only
(their executor runs in the driver's JVM for one command); other masters' drivers keep the JVM's
defaults. Pure functions: no Spark session is started here."""

from __future__ import annotations

import pytest

from kraftwire.spark_decoders.spark.quiet_spark import (
    LOCAL_JVM_OPTIONS,
    driver_java_options,
    is_local_master,
)

LOG4J = "-Dlog4j2.configurationFile=file:/tmp/x/log4j2.properties"


@pytest.mark.parametrize("master", ["local", "local[1]", "local[2]", "local[*]", "local[2,3]"])
def test_local_masters_get_the_short_lived_jvm_options(master):
    assert is_local_master(master)
    options = driver_java_options(master, LOG4J).split()
    assert options[0] == LOG4J
    assert "-XX:TieredStopAtLevel=1" in options and "-XX:+UseSerialGC" in options
    assert options[1:] == LOCAL_JVM_OPTIONS.split()


@pytest.mark.parametrize(
    "master",
    ["local-cluster[2,1,1024]", "spark://127.0.0.1:7077", "yarn", "k8s://https://h:6443", "localx"],
)
def test_other_masters_keep_the_jvm_defaults(master):
    assert not is_local_master(master)
    assert driver_java_options(master, LOG4J) == LOG4J
