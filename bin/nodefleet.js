#!/usr/bin/env node
// The CLI is compiled by `npm ci` (the `prepare` script); see automation/cli/main.ts.
require("../dist/automation/cli/main.js");
