import { ReposApi } from "@hostplane/api/git/GitApi"
import { clientOf } from "../api.ts"
import { RepoNav } from "../repoNav.tsx"
import { Empty, Loaded, time, useLoad } from "../ui.tsx"

const api = clientOf(ReposApi)

export default function RefUpdates({ params }: { readonly params: Record<string, string> }) {
  const org = params["org"]!
  const project = params["project"]!
  const repo = params["repo"]!
  const updates = useLoad(
    () => api().repos.refUpdates({ params: { orgSlug: org, projectName: project, repoName: repo } }),
    [org, project, repo],
    10_000
  )
  return (
    <>
      <h1>Pushes to {repo}</h1>
      <RepoNav org={org} project={project} repo={repo} />
      <Loaded data={updates.data} problem={updates.problem}>
        {(data) =>
          data.items.length === 0 ? (
            <Empty>No push yet: `git push` to the repo's clone URL and each ref change is listed here.</Empty>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>Ref</th>
                  <th>From</th>
                  <th>To</th>
                  <th>By</th>
                  <th>When</th>
                </tr>
              </thead>
              <tbody>
                {data.items.map((update, i) => (
                  <tr key={i}>
                    <td>
                      <code>{update.ref}</code>
                    </td>
                    <td>
                      <code>{update.old?.slice(0, 12) ?? "created"}</code>
                    </td>
                    <td>
                      <code>{update.new?.slice(0, 12) ?? "deleted"}</code>
                    </td>
                    <td>{update.userId}</td>
                    <td>{time(update.at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
    </>
  )
}
