import assert from "node:assert/strict";
import { createServer } from "node:net";
import { fetchFailureCause } from "../../components/shared/fetchFailureCause";

/** fetch's own error for a request to `url`. */
async function fetchError(url: string): Promise<unknown> {
  try {
    await fetch(url);
  } catch (error) {
    return error;
  }
  throw new Error(`${url} answered`);
}

describe("fetchFailureCause", function () {
  it("gives the cause's message when it names its code (a refused address)", async function () {
    // A port nothing listens on: bound by the kernel's pick, then released.
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const { port: picked } = server.address() as { port: number };
        server.close(() => resolve(picked));
      });
    });
    assert.match(
      fetchFailureCause(await fetchError(`http://127.0.0.1:${port}/`)) ?? "",
      new RegExp(`^connect ECONNREFUSED 127\\.0\\.0\\.1:${port}$`),
    );
  });

  it("gives the code when the cause has no message (every address of a name refused: an AggregateError)", function () {
    const cause = Object.assign(
      new AggregateError([new Error("connect ECONNREFUSED ::1:80"), new Error("connect ECONNREFUSED 127.0.0.1:80")], ""),
      { code: "ECONNREFUSED" },
    );
    assert.equal(fetchFailureCause(new TypeError("fetch failed", { cause })), "ECONNREFUSED");
  });

  it("puts the code first when the message lacks it, and gives nothing without a cause", function () {
    const cause = Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" });
    assert.equal(fetchFailureCause(new TypeError("fetch failed", { cause })), "UND_ERR_SOCKET (other side closed)");
    assert.equal(fetchFailureCause(new Error("no cause")), undefined);
  });
});
