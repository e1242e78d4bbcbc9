// `env.storage` inside the isolate (decisions.md part 13): the R2 subset, every call checked by the node. A put's value
// and a get's bytes stream through the node; the other calls are JSON.

/** An R2-like object from the node's metadata; with a response, its body too (read once, as R2's is). */
const storageObject = (meta, response) => {
  if (meta === null) return null
  const object = { key: meta.key, size: meta.size, etag: meta.etag, uploaded: new Date(meta.uploaded) }
  if (response === undefined) return object
  return {
    ...object,
    body: response.body,
    get bodyUsed() {
      return response.bodyUsed
    },
    text: () => response.text(),
    json: () => response.json(),
    arrayBuffer: () => response.arrayBuffer(),
    blob: () => response.blob()
  }
}

const keyOf = (key) => {
  if (typeof key !== "string") throw new TypeError("invalid_key: a key is a string")
  return key
}

const storageBody = (value) => {
  if (value === null || value === undefined) return ""
  if (
    typeof value === "string" ||
    value instanceof ArrayBuffer ||
    ArrayBuffer.isView(value) ||
    value instanceof Blob ||
    value instanceof ReadableStream
  )
    return value
  throw new TypeError("bad_request: a value is a string, ArrayBuffer, typed array, Blob or ReadableStream")
}

export default (_entry, node) => {
  /** A call whose body streams; answers the node's JSON answer, or the response itself when it holds bytes. */
  const streamed = async (method, key, body) => {
    const response = await node.stream(method, { key: keyOf(key) }, body)
    const meta = response.headers.get("x-hostplane-object")
    if (meta !== null) return { meta: JSON.parse(decodeURIComponent(meta)), response }
    return { meta: node.valueOf(await response.json()) }
  }
  return {
    put: async (key, value) => storageObject((await streamed("put", key, storageBody(value))).meta),
    get: async (key) => {
      const { meta, response } = await streamed("get", key)
      return meta === null ? null : storageObject(meta, response)
    },
    head: async (key) => storageObject(await node.call("head", [keyOf(key)])),
    delete: async (keys) => {
      await node.call("delete", [Array.isArray(keys) ? keys : [keys]])
    },
    list: async (options) => {
      const answer = await node.call("list", [options ?? {}])
      return { ...answer, objects: answer.objects.map((meta) => storageObject(meta)) }
    }
  }
}
