# test's usage: what it evaluates, its options, its exit codes
$PR test --help
