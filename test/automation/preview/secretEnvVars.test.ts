import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SECRET_ENV_VARS } from "../../../automation/preview/runPreview";
import { REPOSITORY_ROOT } from "../../support/serveProcess";

describe("the credentials a preview masks", function () {
  it("are variables nodefleet documents as read (a misspelt name would mask nothing)", function () {
    const documented = readFileSync(join(REPOSITORY_ROOT, "docs", "environment.md"), "utf8");
    for (const name of SECRET_ENV_VARS)
      assert.ok(documented.includes(`\`${name}\``), `${name} is not a variable docs/environment.md lists`);
    for (const credential of ["HCLOUD_TOKEN", "SCW_SECRET_KEY", "HROBOT_PASSWORD", "PULUMI_CONFIG_PASSPHRASE"])
      assert.ok((SECRET_ENV_VARS as readonly string[]).includes(credential), credential);
  });
});
