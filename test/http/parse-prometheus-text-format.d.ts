declare module 'parse-prometheus-text-format' {
  interface Family {
    name: string;
    help: string;
    type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
    metrics: { value?: string; labels?: Record<string, string>; buckets?: Record<string, string> }[];
  }
  export default function parsePrometheusTextFormat(text: string): Family[];
}
