import { ReposApi } from "@hostplane/api/git/GitApi"
import { useState } from "preact/hooks"
import { clientOf } from "../api.ts"
import { projectPath } from "../deploys.tsx"
import { enc, Link } from "../router.tsx"
import { Empty, ErrorNote, Field, Loaded, time, useAction, useLoad, useRole } from "../ui.tsx"

const api = clientOf(ReposApi)

export default function Repos({ params }: { readonly params: Record<string, string> }) {
  const org = params["org"]!
  const project = params["project"]!
  const ref = { orgSlug: org, projectName: project }
  const { can } = useRole(org)
  const list = useLoad(() => api().repos.list({ params: ref }), [org, project])
  const [name, setName] = useState("")
  const create = useAction()
  return (
    <>
      <h1>Repos</h1>
      <Loaded data={list.data} problem={list.problem}>
        {(data) =>
          data.items.length === 0 ? (
            <Empty>No repo yet: create one below, then push to its clone URL with git.</Empty>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Visibility</th>
                  <th>Clone</th>
                  <th>Created</th>
                </tr>
              </thead>
              <tbody>
                {data.items.map((repo) => (
                  <tr key={repo.name}>
                    <td>
                      <Link href={`${projectPath(org, project)}/repos/${enc(repo.name)}`}>{repo.name}</Link>
                    </td>
                    <td>{repo.visibility}</td>
                    <td>
                      <code>{repo.cloneUrl}</code>
                      <br />
                      <code>{repo.sshUrl}</code>
                    </td>
                    <td>{time(repo.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
      {can("member") && (
        <form
          class="inline"
          onSubmit={(event) => {
            event.preventDefault()
            void create
              .run(() => api().repos.create({ params: ref, payload: { name } as never }))
              .then((repo) => {
                if (repo !== undefined) {
                  setName("")
                  void list.reload()
                }
              })
          }}
        >
          <Field label="Name" name="repo-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          <button type="submit" disabled={create.busy}>
            Create repo
          </button>
        </form>
      )}
      <ErrorNote problem={create.problem} />
    </>
  )
}
