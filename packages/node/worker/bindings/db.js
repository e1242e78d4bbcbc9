// `env.db` inside the isolate (decisions.md part 13): queries go to the node, which runs them as the project role.

/** A query parameter as the text PostgreSQL reads: dates in ISO form, bytes as `bytea` hex, objects as JSON. */
const paramText = (value) => {
  if (value === null || value === undefined) return null
  if (value instanceof Date) return value.toISOString()
  if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) {
    const bytes =
      value instanceof ArrayBuffer
        ? new Uint8Array(value)
        : new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
    return "\\x" + Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("")
  }
  if (typeof value === "object") return JSON.stringify(value)
  return String(value)
}

export default (entry, node) => ({
  connectionString: entry.connectionString,
  query: (text, params) =>
    node.call("query", [text, Array.isArray(params) ? params.map(paramText) : params === undefined ? [] : params])
})
