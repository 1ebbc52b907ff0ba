/**
 * NODEFLEET_SIM_DROP_CREATE_ANSWERS: a create is committed, then its connection is destroyed without
 * an answer; the node exists all the same, a replay finds it, and only the first creates are affected.
 */
import { strict as assert } from "node:assert";
import { droppedCreateAnswers } from "../../../automation/api/droppedCreateAnswers";
import { nodeIdFor } from "../../../automation/api/nodeIdentity";
import { NodefleetConnectionError } from "../../../automation/client/nodefleetClient";
import { startTestApi, type TestApi } from "../../support/apiHarness";

async function connectionError(promise: Promise<unknown>): Promise<NodefleetConnectionError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof NodefleetConnectionError) return error;
    throw error;
  }
  throw new Error("expected the connection to be dropped, got an answer");
}

describe("dropped create answers (NODEFLEET_SIM_DROP_CREATE_ANSWERS)", function () {
  let api: TestApi | undefined;
  afterEach(async () => {
    await api?.close();
    api = undefined;
  });

  it("commits the first creates without answering them, then answers as usual", async () => {
    api = await startTestApi({ dropCreateAnswers: 2 });
    await connectionError(api.client.createNode({ uniqueID: "lost-1", pool: "hel1-burst" }));
    // Committed although unanswered: the node is listed and can be read.
    const lost = await api.client.getNode(nodeIdFor("lost-1"));
    assert.equal(lost.nodeID, nodeIdFor("lost-1"));
    assert.deepEqual(
      (await api.client.listNodes()).map((node) => node.nodeID),
      [nodeIdFor("lost-1")],
    );
    // A replay is a committed create too: the second answer dropped is its.
    await connectionError(api.client.createNode({ uniqueID: "lost-1", pool: "hel1-burst" }));
    // The knob is spent: the next replay answers the same node, a new create answers 201.
    const replayed = await api.client.createNode({ uniqueID: "lost-1", pool: "hel1-burst" });
    assert.equal(replayed.created, false);
    assert.equal(replayed.node.nodeID, nodeIdFor("lost-1"));
    const fresh = await api.client.createNode({ uniqueID: "answered-1", pool: "hel1-burst" });
    assert.equal(fresh.created, true);
  });

  it("drops no answer when unset", async () => {
    api = await startTestApi();
    assert.equal((await api.client.createNode({ uniqueID: "plain-1", pool: "hel1-burst" })).created, true);
  });

  it("counts down and refuses a count that is not a non-negative integer", () => {
    const take = droppedCreateAnswers(1);
    assert.deepEqual([take(), take(), take()], [true, false, false]);
    assert.equal(droppedCreateAnswers(0)(), false);
    assert.throws(() => droppedCreateAnswers(-1), /non-negative integer/);
    assert.throws(() => droppedCreateAnswers(1.5), /non-negative integer/);
  });
});
