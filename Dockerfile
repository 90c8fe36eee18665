# syntax=docker/dockerfile:1
# mlcost: the Slack bot and its scheduler (`mlcost serve`), and every other `mlcost` command.
#   docker build -t mlcost .
#   docker run --env-file .env -p 3000:3000 mlcost            # serve over HTTP on port 3000
#   docker run --env-file .env mlcost db upgrade               # any other command
# Secrets come from the environment at run time (.env); none is copied into the image.
# See docs/deploy.md.

ARG PYTHON_IMAGE=python:3.11-slim

# ---- build: a wheel from the repository's own pyproject.toml, installed into a venv ----------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY handlers ./handlers
COPY migrations ./migrations
# Every dependency ships a manylinux wheel for CPython 3.11, so no compiler is needed.
RUN python -m pip wheel --no-deps --wheel-dir /wheels . \
 && /opt/venv/bin/pip install /wheels/mlcost-*.whl

# ---- runtime: the venv and a non-root user; no compiler, no source tree, no pip cache -------
FROM ${PYTHON_IMAGE} AS runtime
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PATH=/opt/venv/bin:$PATH \
    MPLCONFIGDIR=/home/mlcost/.matplotlib
# A fixed UID/GID, so volume permissions and Kubernetes' runAsUser can name it.
RUN groupadd --system --gid 10001 mlcost \
 && useradd --system --uid 10001 --gid mlcost --create-home --home-dir /home/mlcost \
      --shell /usr/sbin/nologin mlcost \
 && install -d -o mlcost -g mlcost -m 0750 /var/lib/mlcost
COPY --from=build /opt/venv /opt/venv
# The working directory holds the SQLite file when MLCOST_DATABASE_URL is left at its default.
WORKDIR /var/lib/mlcost
USER 10001:10001
# Build matplotlib's font cache now, not at the first chart.
RUN python -c "import matplotlib.font_manager"
EXPOSE 3000
# serve answers GET /healthz with 200 when the database answers, 503 when it does not.
# (Socket Mode opens no port: disable this check for `serve --socket`.)
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request as u; sys.exit(0 if u.urlopen('http://127.0.0.1:3000/healthz', timeout=4).status == 200 else 1)"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["mlcost"]
CMD ["serve", "--http", "--port", "3000"]
