# paddle-run --help lists every command; --version prints the version
$PR --help
$PR --version | head -n 1 | sed 's/[0-9][0-9.]*/VERSION/'
