# Sourced by tests/run.sh and tests/run_wheel.sh: sets pytest_workers to the pytest-xdist
# arguments that spread the suite over one process per CPU, up to 4. Most tests are
# single-threaded Python, so on the 2-CPU CI machine two processes take about 0.6x the time of
# one. Whole files go to one process (--dist loadfile): a module's Dask or Ray cluster fixture
# starts once, and no two processes start one each from the same file. OPWEAVE_TEST_WORKERS=1
# runs the suite in one process (as does a missing pytest-xdist); =N asks for N.
pytest_workers=()
workers="${OPWEAVE_TEST_WORKERS:-$(nproc)}"
[ "$workers" -le 4 ] || workers=4
if [ "$workers" -gt 1 ] && python -c "import xdist" 2>/dev/null; then
  pytest_workers=(-n "$workers" --dist loadfile)
fi
