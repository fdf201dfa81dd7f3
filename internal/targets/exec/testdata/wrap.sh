# Runs its arguments with one variable set: proof the wrapper ran.
export GH_WRAPPED=yes
exec "$@"
