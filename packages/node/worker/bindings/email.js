// `env.email` inside the isolate (decisions.md part 13): a message goes through the node mail relay.

export default (_entry, node) => ({
  send: (message) => node.call("send", [typeof message === "string" ? { raw: message } : message])
})
