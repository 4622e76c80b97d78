# Sourced: creates (once) a venv with the Python packages our tests use as independent readers
# (deltalake; pyarrow and pyroaring for a Delta reader written from the protocol), selenium,
# which drives a real browser for the web view's tests, and pyspark-client, with which Python
# definition files load; and sets THUND_PYTHON to its interpreter. The venv lives in the cache,
# outside the repo.
THUND_VENV="${THUND_VENV:-$HOME/.cache/thund-venv}"
if [ ! -x "$THUND_VENV/bin/python" ] || ! "$THUND_VENV/bin/python" -c 'import deltalake, pyarrow, pyroaring, selenium, pyspark.pipelines' 2>/dev/null; then
  python3 -m venv "$THUND_VENV"
  "$THUND_VENV/bin/pip" install --quiet --disable-pip-version-check 'deltalake>=1.1,<2' 'pyarrow>=17' 'pyroaring>=1,<2' 'selenium>=4.10,<5' 'pyspark-client>=4.1,<4.2'
fi
THUND_PYTHON="$THUND_VENV/bin/python"
