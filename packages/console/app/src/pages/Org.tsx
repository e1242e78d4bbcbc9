import { ProjectsApi } from "@hostplane/api/projects/ProjectsApi"
import { useState } from "preact/hooks"
import { clientOf } from "../api.ts"
import { enc, Link, navigate } from "../router.tsx"
import { Empty, ErrorNote, Field, Loaded, time, useAction, useLoad, useRole } from "../ui.tsx"

const api = clientOf(ProjectsApi)

export default function Org({ params }: { readonly params: Record<string, string> }) {
  const org = params["org"]!
  const { can } = useRole(org)
  const { data, problem } = useLoad(() => api().projects.list({ params: { orgSlug: org } }), [org])
  const [name, setName] = useState("")
  const create = useAction()
  return (
    <>
      <h1>Projects</h1>
      <Loaded data={data} problem={problem}>
        {(list) =>
          list.items.length === 0 ? (
            <Empty>
              <p>No project yet. Create one below, or deploy a folder with the CLI, which creates it:</p>
              <pre>hostplane deploy ./site --org {org} --project my-site</pre>
            </Empty>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Hostname</th>
                  <th>Created</th>
                </tr>
              </thead>
              <tbody>
                {list.items.map((project) => (
                  <tr key={project.id}>
                    <td>
                      <Link href={`/orgs/${enc(org)}/projects/${enc(project.name)}`}>{project.name}</Link>
                    </td>
                    <td>
                      <code>{project.hostname}</code>
                    </td>
                    <td>{time(project.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
      {can("member") && (
        <>
          <h2>Create a project</h2>
          <form
            class="inline"
            onSubmit={(event) => {
              event.preventDefault()
              void create
                .run(() => api().projects.create({ params: { orgSlug: org }, payload: { name } as never }))
                .then((project) => {
                  if (project !== undefined) navigate(`/orgs/${enc(org)}/projects/${enc(project.name)}`)
                })
            }}
          >
            <Field label="Name" name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
            <button type="submit" disabled={create.busy}>
              Create project
            </button>
          </form>
          <ErrorNote problem={create.problem} />
        </>
      )}
    </>
  )
}
