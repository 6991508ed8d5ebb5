# The project's image: the code location, the run and step pods of Dagster's Helm chart
# (deploy/k8s/values.yaml), and the `mind` command line. Two stages: the first installs the
# dependencies and exports the embedding model's ONNX files from the packaged weights; the second
# keeps the virtual environment and those files, without compilers or pip's caches.
#   docker build -t registry.example.com/mind-harvest:0.1.0 .
ARG PYTHON=python:3.11-slim-bookworm

FROM ${PYTHON} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    MIND_HARVEST_ONNX_CACHE=/opt/mind-harvest/onnx
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
# torch first and pinned to the CPU build, as the Makefile does: an unpinned torch is the CUDA build.
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0
WORKDIR /src
COPY pyproject.toml README.md ./
COPY mind_core ./mind_core
COPY plugins ./plugins
COPY pipelines ./pipelines
COPY deploy/requirements-dagster.txt ./deploy/requirements-dagster.txt
# Not editable: the image holds the package, not this folder. s3fs for the object store.
RUN pip install '.[s3]' && pip install --no-deps -r deploy/requirements-dagster.txt
# The model's ONNX files, exported once here; the image never downloads a model.
RUN python -m mind_core.embeddings.onnx_export

FROM ${PYTHON}
ENV PATH=/opt/venv/bin:$PATH \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
    MIND_HARVEST_ONNX_CACHE=/opt/mind-harvest/onnx \
    MIND_HOME=/minds \
    DAGSTER_HOME=/opt/dagster/dagster_home
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/mind-harvest/onnx /opt/mind-harvest/onnx
# The deployment files the runs read (the k8s executor's configuration, the instance examples).
COPY deploy /opt/mind-harvest/deploy
RUN useradd --create-home --uid 10001 mind \
    && mkdir -p /minds /sources "$DAGSTER_HOME" \
    && chown mind /minds "$DAGSTER_HOME"
USER mind
WORKDIR /home/mind
EXPOSE 3030
CMD ["dagster", "api", "grpc", "-h", "0.0.0.0", "-p", "3030", "-m", "mind_harvest.pipelines.definitions", "-a", "defs"]
