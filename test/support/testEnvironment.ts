/**
 * Mocha's --require (with reapOnExit.js): the tests run on the toolchain's plugin doubles, held to
 * upstream's behaviour in toolchain/providers/FIDELITY.md (docs/engines.md, "Which plugins a run
 * uses"). A test of upstream plugin resolution sets NODEFLEET_PLUGINS in its own environment.
 */
process.env.NODEFLEET_PLUGINS ??= "toolchain";
