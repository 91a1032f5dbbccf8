# The two set-up commands of the README. Both create .venv when it is missing and install the
# project with its pinned extras; the stamp file re-installs only when pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.kraftwire-installed

.PHONY: demo test generate native kafka corpus clean

# pip's own chatter (and setuptools' note that an editable install maps folders by name) goes to
# .venv/install.log, shown only when the install fails.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing kraftwire and its pinned dependencies into $(VENV) (log: $(VENV)/install.log)"
	@$(BIN)/python -m pip install --upgrade pip > $(VENV)/install.log 2>&1 \
		&& $(BIN)/python -m pip install -e '.[dev]' >> $(VENV)/install.log 2>&1 \
		|| { cat $(VENV)/install.log; exit 1; }
	@touch $(STAMP)

# DEMO_DIR=DIR keeps the demo's configs, logs, data and captures there (a new or empty directory).
demo: $(STAMP)
	$(BIN)/python -m kraftwire.demo $(if $(DEMO_DIR),--dir $(DEMO_DIR))

# Two passes: most tests spread over every core (pytest-xdist: much of their time is spent waiting on
# nodes, timers and sockets), then the tests marked serial alone (Kafka's JVMs, quorums timed under
# load; tests/conftest.py says which). Both passes always run; the target fails if either failed.
test: $(STAMP)
	@status=0; \
	$(BIN)/python -m pytest -n auto -m "not serial" || status=$$?; \
	$(BIN)/python -m pytest -m serial || status=$$?; \
	exit $$status

# Regenerate the bundled codecs after editing schemas/ or codegen/.
generate: $(STAMP)
	$(BIN)/kraftwire codegen --schemas schemas --out generated --package kraftwire.generated

# The optional compiled build: mypyc builds one extension per spec into generated/, and the
# decoders' hot path into spark_decoders/_native/ (both git-ignored); kraftwire.generated and
# kraftwire.spark_decoders use them when present (KRAFTWIRE_PURE=1 forces the pure ones).
native: $(STAMP)
	$(BIN)/kraftwire codegen --native --schemas schemas --out generated --package kraftwire.generated
	$(BIN)/python -m kraftwire.spark_decoders.native.build

# Apache Kafka's released jars for the interop tests (tests/interop): Maven resolves them from Maven
# Central into ~/.m2 and writes one class path per release to interop/target/. Nothing is committed.
KAFKA_RELEASES := 4.4.0 4.0.2
kafka:
	@command -v java >/dev/null || { echo "make kafka: Java 17 is needed (apt-get install openjdk-17-jdk-headless)"; exit 1; }
	@command -v mvn >/dev/null || { echo "make kafka: Maven is needed (apt-get install maven)"; exit 1; }
	@for v in $(KAFKA_RELEASES); do \
		mvn -q -B -Dstyle.color=never -f interop/pom.xml dependency:build-classpath -Dkafka.version=$$v \
			-Dmdep.outputFile=target/kafka-$$v.classpath || exit 1; \
		echo "Apache Kafka $$v: interop/target/kafka-$$v.classpath"; \
	done

# Record the real clients' capture corpus again (tests/corpus/record.py): Kafka 4.4.0 on loopback,
# tcpdump, Kafka's Java clients, kafka-python and confluent-kafka. Needs `make kafka` and root (tcpdump).
corpus: $(STAMP)
	@$(BIN)/python -m pip install -q -e '.[corpus]' >> $(VENV)/install.log 2>&1 || { tail $(VENV)/install.log; exit 1; }
	$(BIN)/python tests/corpus/record.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
