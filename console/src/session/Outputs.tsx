import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { BETA, rest } from '../api';
import { ErrorText, Loaded, type Page } from '../ui';

type Output = { filename: string; size_bytes: number; mime_type: string; updated_at: string };
type FileMeta = {
  id: string;
  filename: string;
  size_bytes: number;
  mime_type: string;
  created_at: string;
  downloadable: boolean;
};

const size = (n: number) =>
  n < 1024
    ? `${n} B`
    : n < 1024 * 1024
      ? `${(n / 1024).toFixed(1)} KB`
      : `${(n / 1048576).toFixed(1)} MB`;

/**
 * The session's outputs (GET /v1/sessions/:id/outputs, files the sandbox wrote under
 * /mnt/session/outputs) and the files scoped to it (GET /v1/files?scope_id=), with downloads.
 * `version` changes when the session goes idle, which refetches both.
 */
export function Outputs({ id, version }: { id: string; version: number }) {
  const sid = encodeURIComponent(id);
  const outputs = useVersioned<{ data: Output[] }>(`/v1/sessions/${sid}/outputs`, version);
  const files = useVersioned<Page<FileMeta>>(`/v1/files?scope_id=${sid}&limit=100`, version);
  return (
    <section aria-label="Outputs and files">
      <h2>Outputs</h2>
      <button
        type="button"
        onClick={() => void Promise.all([outputs.refetch(), files.refetch()])}
        disabled={outputs.isFetching || files.isFetching}
      >
        Refresh outputs and files
      </button>
      <Loaded q={outputs} empty={!outputs.data?.data.length} emptyText="No outputs yet.">
        <ul className="rows" aria-label="Outputs">
          {outputs.data?.data.map((o) => (
            <li key={o.filename}>
              <OutputLink
                path={`/v1/sessions/${sid}/outputs/${encodeURIComponent(o.filename)}`}
                name={o.filename}
              />{' '}
              {size(o.size_bytes)} · {o.mime_type}
            </li>
          ))}
        </ul>
      </Loaded>
      <h2>Files</h2>
      <Loaded q={files} empty={!files.data?.data.length} emptyText="No files for this session.">
        <ul className="rows" aria-label="Files">
          {files.data?.data.map((f) => (
            <li key={f.id}>
              {f.downloadable ? (
                <a href={`/v1/files/${encodeURIComponent(f.id)}/content`} download={f.filename}>
                  {f.filename}
                </a>
              ) : (
                <span>{f.filename} (expired)</span>
              )}{' '}
              {size(f.size_bytes)} · {f.mime_type}
            </li>
          ))}
        </ul>
      </Loaded>
    </section>
  );
}

/** A REST read keyed by path and version (a new version refetches, keeping the old data shown). */
const useVersioned = <T,>(path: string, version: number) =>
  useQuery({
    queryKey: [path, version],
    queryFn: () => rest<T>(path),
    placeholderData: (prev) => prev,
  });

/**
 * An output's route is a beta extension (it needs the anthropic-beta header, which a plain
 * link cannot send): the click fetches it with the header and saves the bytes.
 */
function OutputLink({ path, name }: { path: string; name: string }) {
  const [error, setError] = useState('');
  const download = async (e: React.MouseEvent<HTMLAnchorElement>) => {
    e.preventDefault();
    setError('');
    try {
      const res = await fetch(path, {
        headers: { 'anthropic-beta': BETA },
        credentials: 'same-origin',
      });
      if (!res.ok) throw new Error(`download failed: HTTP ${res.status}`);
      const url = URL.createObjectURL(await res.blob());
      const a = document.createElement('a');
      a.href = url;
      a.download = name;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <>
      <a href={path} download={name} onClick={(e) => void download(e)}>
        {name}
      </a>
      <ErrorText error={error} />
    </>
  );
}
