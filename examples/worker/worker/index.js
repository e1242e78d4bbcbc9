// A small notes app on hostplane's bindings: notes in the project's PostgreSQL (env.db), attachments in its object
// storage (env.storage), the page from assets/ (served by the edge, and by env.ASSETS for paths the app owns).

const json = (body, status = 200) => Response.json(body, { status })

/** The table on first use: a fresh database has none. */
let ready
const schema = (db) =>
  (ready ??= db
    .query(
      `create table if not exists notes (
        id serial primary key,
        body text not null check (length(body) between 1 and 10000),
        created_at timestamptz not null default now()
      )`
    )
    .catch((error) => {
      ready = undefined
      throw error
    }))

const notes = async (request, env) => {
  if (env.db === undefined) return json({ code: "no_database", message: "grant the database add-on" }, 503)
  await schema(env.db)
  if (request.method === "GET") {
    const { rows } = await env.db.query("select id, body, created_at from notes order by id desc limit 100")
    return json({ items: rows })
  }
  if (request.method === "POST") {
    const { body } = await request.json().catch(() => ({}))
    if (typeof body !== "string" || body.trim() === "")
      return json({ code: "bad_request", message: "body is required" }, 400)
    const { rows } = await env.db.query("insert into notes (body) values ($1) returning id, body, created_at", [body])
    return json(rows[0], 201)
  }
  return json({ code: "method_not_allowed", message: "GET or POST" }, 405)
}

const files = async (request, env, name) => {
  if (env.storage === undefined) return json({ code: "no_storage", message: "grant the storage add-on" }, 503)
  const key = `files/${name}`
  if (request.method === "PUT") {
    try {
      const object = await env.storage.put(key, request.body)
      return json({ key: object.key, size: object.size, etag: object.etag }, 201)
    } catch (error) {
      // quota_exceeded and the like: the binding's message says which.
      return json({ code: "storage_refused", message: error.message }, 413)
    }
  }
  if (request.method === "GET") {
    const object = await env.storage.get(key)
    if (object === null) return json({ code: "not_found", message: `no file ${name}` }, 404)
    return new Response(object.body, { headers: { etag: object.etag, "content-length": String(object.size) } })
  }
  if (request.method === "DELETE") {
    await env.storage.delete(key)
    return new Response(null, { status: 204 })
  }
  return json({ code: "method_not_allowed", message: "GET, PUT or DELETE" }, 405)
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    if (url.pathname === "/api/notes") return notes(request, env)
    if (url.pathname === "/api/files") {
      const listed = await env.storage.list({ prefix: "files/" })
      return json({ items: listed.objects.map((object) => ({ name: object.key.slice(6), size: object.size })) })
    }
    const file = /^\/api\/files\/([^/]+)$/.exec(url.pathname)
    if (file !== null) return files(request, env, decodeURIComponent(file[1]))
    if (url.pathname.startsWith("/api/")) return json({ code: "not_found", message: `no route ${url.pathname}` }, 404)
    // Every other path is a page of the app: the one page, from assets/.
    return env.ASSETS.fetch(new URL("/index.html", request.url))
  }
}
