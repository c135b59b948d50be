# Sourced by the tests that build extra steps (mutant_tile.sh, mutant_far.sh, throwaway_steps.sh):
# repo_copy NAME makes a temporary copy of this repository (its tracked files, or without git the
# folders a build needs), removed when the script exits, and changes into it, so that the test's
# throwaway steps never touch the working tree. Sets tmp to the copy's path.
repo_copy() {
    tmp=$(mktemp -d "/tmp/attn-$1-XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    git ls-files -z 2>/dev/null | xargs -0 -I{} cp --parents {} "$tmp" 2>/dev/null ||
        cp -r Makefile common cli bench steps tests "$tmp"
    cd "$tmp"
}
