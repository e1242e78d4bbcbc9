// `env.ai` inside the isolate (decisions.md part 13): a chat-completions body through the node's AI gateway.

export default (_entry, node) => ({ chat: (body) => node.call("chat", [body]) })
