// `env.auth` inside the isolate (decisions.md part 13): the end user of the request this invocation received.

export default (_entry, node) => ({
  // Only the request this invocation received carries its user; one the worker built resolves null.
  user: async (asked) => (asked === node.request && node.handle !== null ? node.call("user", [node.handle]) : null)
})
