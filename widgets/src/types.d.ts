declare module "plotly.js-basic-dist-min" {
  const Plotly: any;
  export default Plotly;
}
