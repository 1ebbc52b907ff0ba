/**
 * A fault knob for tests of a client's recovery (NODEFLEET_SIM_DROP_CREATE_ANSWERS): the first `count`
 * creates the API commits (new nodes and replays alike) lose their answer, as when the connection
 * breaks after the service committed the request and before the client read the response. The
 * create route asks `take()` once a create is committed and, when it says so, destroys the
 * connection instead of answering. The Karpenter driver's instance garbage collector is what then
 * deletes a node whose NodeClaim went away meanwhile (docs/karpenter.md, "Leaked servers").
 */
export function droppedCreateAnswers(count: number): () => boolean {
  if (!Number.isInteger(count) || count < 0)
    throw new Error(`the number of create answers to drop must be a non-negative integer, got ${count}`);
  let left = count;
  return () => {
    if (left === 0) return false;
    left -= 1;
    return true;
  };
}
