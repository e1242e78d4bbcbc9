import { projectPath } from "./deploys.tsx"
import { enc, Link } from "./router.tsx"

export const RepoNav = (props: { readonly org: string; readonly project: string; readonly repo: string }) => {
  const base = `${projectPath(props.org, props.project)}/repos/${enc(props.repo)}`
  return (
    <p class="row">
      <Link href={base}>Files</Link>
      <Link href={`${base}/commits`}>Commits</Link>
      <Link href={`${base}/ref-updates`}>Pushes</Link>
    </p>
  )
}
