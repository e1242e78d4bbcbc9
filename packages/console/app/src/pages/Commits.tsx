import { ReposApi } from "@hostplane/api/git/GitApi"
import { clientOf } from "../api.ts"
import { RepoNav } from "../repoNav.tsx"
import { useLocation } from "../router.tsx"
import { Empty, ErrorNote, time, useLoad } from "../ui.tsx"

const api = clientOf(ReposApi)

export default function Commits({ params }: { readonly params: Record<string, string> }) {
  const org = params["org"]!
  const project = params["project"]!
  const repo = params["repo"]!
  const { query } = useLocation()
  const repoRef = { orgSlug: org, projectName: project, repoName: repo }
  const refs = useLoad(() => api().repos.refs({ params: repoRef }), [org, project, repo])
  const hasCommits = refs.data !== undefined && JSON.stringify(refs.data).includes('"name"')
  const commits = useLoad(
    () =>
      hasCommits
        ? api().repos.commits({ params: repoRef, query: { ref: query.get("ref") ?? "" } as never })
        : Promise.resolve(undefined),
    [org, project, repo, hasCommits]
  )
  return (
    <>
      <h1>Commits of {repo}</h1>
      <RepoNav org={org} project={project} repo={repo} />
      {refs.data !== undefined && !hasCommits && <Empty>No commit yet: push a branch to this repo.</Empty>}
      <ErrorNote problem={refs.problem ?? commits.problem} />
      {commits.data !== undefined && (
        <table>
          <thead>
            <tr>
              <th>Commit</th>
              <th>Message</th>
              <th>Author</th>
              <th>Date</th>
            </tr>
          </thead>
          <tbody>
            {commits.data.items.map((commit) => (
              <tr key={commit.sha}>
                <td>
                  <code>{commit.sha.slice(0, 12)}</code>
                </td>
                <td>{commit.message.split("\n")[0]}</td>
                <td>{commit.author.name}</td>
                <td>{time(commit.author.date)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  )
}
